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

/* 8-4-4-4-12 lower-case hex, '-' or '_' separated (systemd escapes '-'). */
static bool is_uuid(const char *s, size_t n)
{
	static const size_t groups[5] = {8, 4, 4, 4, 12};
	if (n != 36)
		return false;
	size_t at = 0;
	for (int g = 0; g < 5; g++) {
		if (!all_hex(s + at, groups[g]))
			return false;
		at += groups[g];
		if (g < 4) {
			if (s[at] != '-' && s[at] != '_')
				return false;
			at++;
		}
	}
	return true;
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

/* "8-4-4-4-4" hex: the short form Cloud Foundry (PCF/Garden) names containers with. */
static bool is_pcf_id(const char *s, size_t n)
{
	static const size_t groups[5] = {8, 4, 4, 4, 4};
	if (n != 28)
		return false;
	size_t at = 0;
	for (int g = 0; g < 5; g++) {
		if (!all_hex(s + at, groups[g]))
			return false;
		at += groups[g];
		if (g < 4) {
			if (s[at] != '-')
				return false;
			at++;
		}
	}
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

bool export_container_id_parse(const char *text, size_t n, char *out, size_t cap)
{
	enum id_rank best = ID_NONE;
	size_t pos = 0;
	while (pos < n) {
		const char *nl = rt_memchr(text + pos, '\n', n - pos);
		size_t end = nl ? (size_t)(nl - text) : n;
		const char *line = text + pos;
		size_t len = end - pos;
		pos = nl ? end + 1 : n;
		/* Skip "hierarchy-ID:controllers:" to the path. */
		const char *c1 = rt_memchr(line, ':', len);
		if (!c1)
			continue;
		const char *c2 = rt_memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line));
		if (!c2)
			continue;
		const char *path = c2 + 1;
		size_t plen = len - (size_t)(path - line);
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
	while (pos < n) {
		const char *nl = rt_memchr(text + pos, '\n', n - pos);
		size_t end = nl ? (size_t)(nl - text) : n;
		const char *line = text + pos;
		size_t len = end - pos;
		pos = nl ? end + 1 : n;
		const char *c1 = rt_memchr(line, ':', len);
		if (!c1)
			continue;
		const char *ctl = c1 + 1;
		const char *c2 = rt_memchr(ctl, ':', len - (size_t)(ctl - line));
		if (!c2 || rt_memchr(c2 + 1, ':', len - (size_t)(c2 + 1 - line)))
			continue; /* exactly three fields */
		size_t ctl_len = (size_t)(c2 - ctl);
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
		const char *path = c2 + 1;
		size_t plen = len - (size_t)(path - line);
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
	if (sys_statx(AT_FDCWD, path, 0, STATX_INO, &st) < 0 || !(st.stx_mask & STATX_INO))
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
