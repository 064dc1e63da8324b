/* Container id from /proc/self/cgroup; see cgroup.h. */
#include "export/cgroup.h"

#include "rt/rt.h"
#include "rt/sys.h"

#include <linux/stat.h>

#define CGROUP_FILE_MAX (64 * 1024)
#define EXPORT_URL_PATH_MAX_CGROUP 4096

static bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_hex(s[i]))
			return false;
	return true;
}

/* Groups of lower-case hex of the given lengths, separated by '-' (or '_'
 * when allowed: systemd escapes '-'). */
static bool is_hex_groups(const char *s, size_t n, const size_t *groups, int n_groups,
			  bool underscore)
{
	size_t at = 0;
	for (int g = 0; g < n_groups; g++) {
		if (at + groups[g] > n || !all_hex(s + at, groups[g]))
			return false;
		at += groups[g];
		if (g + 1 < n_groups) {
			if (at >= n || !(s[at] == '-' || (underscore && s[at] == '_')))
				return false;
			at++;
		}
	}
	return at == n;
}

/* 8-4-4-4-12: a UUID. */
static bool is_uuid(const char *s, size_t n)
{
	static const size_t groups[5] = {8, 4, 4, 4, 12};
	return is_hex_groups(s, n, groups, 5, true);
}

/* 8-4-4-4-4: the short form Cloud Foundry (PCF/Garden) names containers with. */
static bool is_pcf_id(const char *s, size_t n)
{
	static const size_t groups[5] = {8, 4, 4, 4, 4};
	return is_hex_groups(s, n, groups, 5, false);
}

/* "<32 hex>-<1..10 digits>" (ECS on EC2). */
static bool is_ecs_task_id(const char *s, size_t n)
{
	if (n < 34 || n > 43 || !all_hex(s, 32) || s[32] != '-')
		return false;
	for (size_t i = 33; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

enum id_rank { ID_NONE = 0, ID_PCF, ID_UUID, ID_ECS, ID_HEX64 };

/* Ranks the id at the end of one path component (after a runtime prefix,
 * before an optional ".scope") and returns where it starts and its length. */
static enum id_rank component_id(const char *comp, size_t n, size_t *start, size_t *len)
{
	if (n >= 6 && rt_memcmp(comp + n - 6, ".scope", 6) == 0)
		n -= 6;
	if (n >= 64 && all_hex(comp + n - 64, 64) &&
	    (n == 64 || comp[n - 65] == '-' || comp[n - 65] == ':')) {
		*start = n - 64;
		*len = 64;
		return ID_HEX64;
	}
	/* The ECS form contains '-': try it on the whole component. */
	if (is_ecs_task_id(comp, n)) {
		*start = 0;
		*len = n;
		return ID_ECS;
	}
	if (n >= 36 && is_uuid(comp + n - 36, 36) && (n == 36 || comp[n - 37] == '-')) {
		*start = n - 36;
		*len = 36;
		return ID_UUID;
	}
	if (n >= 28 && is_pcf_id(comp + n - 28, 28) && (n == 28 || comp[n - 29] == '-')) {
		*start = n - 28;
		*len = 28;
		return ID_PCF;
	}
	return ID_NONE;
}

/* One line of the cgroup file, "hierarchy-ID:controllers:path". */
struct cgroup_line {
	const char *controllers;
	size_t controllers_len;
	const char *path; /* the rest of the line after the second ':' */
	size_t path_len;
	bool three_fields; /* no ':' in the path */
};

/* The next line at *pos; false at the end.  A line with fewer than two
 * ':' has path NULL. */
static bool next_cgroup_line(const char *text, size_t n, size_t *pos, struct cgroup_line *out)
{
	if (*pos >= n)
		return false;
	const char *line = text + *pos;
	const char *nl = rt_memchr(line, '\n', n - *pos);
	size_t len = nl ? (size_t)(nl - line) : n - *pos;
	*pos = nl ? *pos + len + 1 : n;
	rt_memset(out, 0, sizeof(*out));
	const char *c1 = rt_memchr(line, ':', len);
	if (!c1)
		return true;
	const char *c2 = rt_memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line));
	if (!c2)
		return true;
	out->controllers = c1 + 1;
	out->controllers_len = (size_t)(c2 - (c1 + 1));
	out->path = c2 + 1;
	out->path_len = len - (size_t)(out->path - line);
	out->three_fields = !rt_memchr(out->path, ':', out->path_len);
	return true;
}

bool export_container_id_parse(const char *text, size_t n, char *out, size_t cap)
{
	enum id_rank best = ID_NONE;
	size_t pos = 0;
	struct cgroup_line cl;
	while (next_cgroup_line(text, n, &pos, &cl)) {
		if (!cl.path)
			continue;
		const char *path = cl.path;
		size_t plen = cl.path_len;
		/* The id is the deepest component that names one. */
		size_t comp_end = plen;
		for (size_t depth = 0; depth < 64 && comp_end > 0; depth++) {
			size_t comp_start = comp_end;
			while (comp_start > 0 && path[comp_start - 1] != '/')
				comp_start--;
			size_t start, id_len;
			enum id_rank rank =
				component_id(path + comp_start, comp_end - comp_start, &start, &id_len);
			if (rank > best && id_len < cap) {
				best = rank;
				rt_memcpy(out, path + comp_start + start, id_len);
				out[id_len] = '\0';
			}
			if (rank != ID_NONE || comp_start == 0)
				break;
			comp_end = comp_start - 1;
		}
	}
	return best != ID_NONE;
}

bool export_cgroup_node_path(const char *text, size_t n, char *out, size_t cap)
{
	bool found = false;
	size_t pos = 0;
	struct cgroup_line cl;
	while (next_cgroup_line(text, n, &pos, &cl)) {
		if (!cl.path || !cl.three_fields)
			continue;
		const char *ctl = cl.controllers;
		size_t ctl_len = cl.controllers_len;
		bool memory = false;
		for (size_t at = 0, guard = 0; at <= ctl_len && guard < 64; guard++) {
			const char *comma = rt_memchr(ctl + at, ',', ctl_len - at);
			size_t item = comma ? (size_t)(comma - (ctl + at)) : ctl_len - at;
			if (item == 6 && rt_memcmp(ctl + at, "memory", 6) == 0)
				memory = true;
			if (!comma)
				break;
			at += item + 1;
		}
		if (!memory && ctl_len != 0)
			continue;
		const char *path = cl.path;
		size_t plen = cl.path_len;
		while (plen > 0 && path[0] == '/') {
			path++;
			plen--;
		}
		if (plen + 8 >= cap)
			continue;
		size_t o = 0;
		if (memory) {
			rt_memcpy(out, "memory", 6);
			o = 6;
			if (plen)
				out[o++] = '/';
		}
		rt_memcpy(out + o, path, plen);
		out[o + plen] = '\0';
		found = true;
		if (memory)
			break; /* the v1 memory controller wins over the v2 line */
	}
	return found;
}

static long read_cgroup_file(const char *file, char **text)
{
	*text = rt_malloc(CGROUP_FILE_MAX);
	if (!*text)
		return -ENOMEM;
	return rt_read_file(file && file[0] ? file : "/proc/self/cgroup", *text, CGROUP_FILE_MAX);
}

bool export_container_id_read(const char *cgroup_file, char *out, size_t cap)
{
	char *text;
	long len = read_cgroup_file(cgroup_file, &text);
	bool found = len > 0 && export_container_id_parse(text, (size_t)len, out, cap);
	rt_free(text);
	return found;
}

static bool inode_of(const char *path, uint64_t *ino)
{
	struct statx st;
	rt_memset(&st, 0, sizeof(st));
	if (rt_statx(AT_FDCWD, path, 0, STATX_INO, &st) < 0 || !(st.stx_mask & STATX_INO))
		return false;
	*ino = st.stx_ino;
	return true;
}

bool export_entity_id_read(const char *cgroup_file, const char *cgroup_mount, char *out,
			   size_t cap)
{
	char cid[EXPORT_CONTAINER_ID_MAX];
	if (export_container_id_read(cgroup_file, cid, sizeof(cid))) {
		rt_snprintf(out, cap, "ci-%s", cid);
		return true;
	}
	/* In the host's cgroup namespace the directory says nothing about a
	 * container, and libdatadog sends no inode either. */
	uint64_t ns_ino;
	if (!inode_of("/proc/self/ns/cgroup", &ns_ino) || ns_ino == EXPORT_HOST_CGROUP_NS_INODE)
		return false;
	char *text;
	long len = read_cgroup_file(cgroup_file, &text);
	char *node = rt_malloc(EXPORT_URL_PATH_MAX_CGROUP);
	bool found = false;
	if (len > 0 && node &&
	    export_cgroup_node_path(text, (size_t)len, node, EXPORT_URL_PATH_MAX_CGROUP)) {
		char *full = rt_malloc(EXPORT_URL_PATH_MAX_CGROUP * 2);
		uint64_t ino;
		if (full) {
			rt_snprintf(full, EXPORT_URL_PATH_MAX_CGROUP * 2, "%s/%s",
				    cgroup_mount && cgroup_mount[0] ? cgroup_mount : "/sys/fs/cgroup",
				    node);
			if (inode_of(full, &ino)) {
				rt_snprintf(out, cap, "in-%llu", (unsigned long long)ino);
				found = true;
			}
			rt_free(full);
		}
	}
	rt_free(node);
	rt_free(text);
	return found;
}
