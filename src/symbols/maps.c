/* /proc/self/maps line parser (see maps.h).  Line format:
 *   start-end perms offset major:minor inode   path */
#include "symbols/maps.h"

#include <linux/elf.h>

#include "rt/rt.h"
#include "rt/sys.h"

#define MAPS_READ_CHUNK 65536
#define MAPS_READ_MIN 4096 /* room below this is grown first: a line fits */
#define MAPS_MAX_BYTES (64u << 20)
#define MAPPED_FILE_MAX (4ull << 30)
#define ELF64_EHDR_BYTES 64u

bool maps_read_self(struct rt_buf *b)
{
	long fd = sys_open("/proc/self/maps", O_RDONLY, 0);
	if (fd < 0)
		return false;
	bool ok = true;
	while (b->len < MAPS_MAX_BYTES) {
		/* Grown only when nearly full: a small process's maps fit the
		 * first chunk, whose end-of-file read then costs no copy. */
		if (b->cap - b->len < MAPS_READ_MIN && !rt_buf_reserve(b, MAPS_READ_CHUNK)) {
			ok = false;
			break;
		}
		long n = sys_read((int)fd, b->data + b->len, b->cap - b->len);
		if (n == -EINTR)
			continue;
		if (n < 0) {
			ok = false;
			break;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	(void)sys_close((int)fd);
	return ok && !b->failed;
}

bool maps_map_file(const struct maps_entry *e, const char *path, struct maps_file *out)
{
	out->data = NULL;
	out->size = 0;
	long fd = sys_open(path, O_RDONLY, 0);
	if (fd < 0)
		return false;
	struct statx st;
	rt_memset(&st, 0, sizeof(st));
	long r = rt_statx((int)fd, "", AT_EMPTY_PATH, STATX_INO | STATX_SIZE, &st);
	void *p = (void *)-1L;
	if (r == 0 && st.stx_ino == e->inode && st.stx_dev_major == e->dev_major &&
	    st.stx_dev_minor == e->dev_minor && st.stx_size >= ELF64_EHDR_BYTES &&
	    st.stx_size <= MAPPED_FILE_MAX)
		p = sys_mmap(NULL, (size_t)st.stx_size, PROT_READ, MAP_PRIVATE, (int)fd, 0);
	(void)sys_close((int)fd);
	if (SYS_IS_ERR(p))
		return false;
	out->data = p;
	out->size = (size_t)st.stx_size;
	return true;
}

void maps_unmap_file(struct maps_file *f)
{
	if (f->data)
		(void)sys_munmap((void *)(uintptr_t)f->data, f->size);
	f->data = NULL;
	f->size = 0;
}

/* Length of the run of non-space bytes at s[0..n). */
static size_t token_len(const char *s, size_t n, char stop)
{
	size_t i = 0;
	while (i < n && s[i] != ' ' && s[i] != stop)
		i++;
	return i;
}

static bool take_hex(const char **s, size_t *n, char stop, uint64_t *out)
{
	size_t t = token_len(*s, *n, stop);
	if (t == 0 || t > 16 || !rt_parse_hex_u64(*s, t, out))
		return false;
	*s += t;
	*n -= t;
	if (*n == 0 || **s != stop)
		return false;
	(*s)++;
	(*n)--;
	return true;
}

bool maps_parse_line(const char *line, size_t len, struct maps_entry *out)
{
	const char *s = line;
	size_t n = len;
	uint64_t major, minor;
	rt_memset(out, 0, sizeof(*out));
	if (!take_hex(&s, &n, '-', &out->start) || !take_hex(&s, &n, ' ', &out->end) ||
	    out->end <= out->start || n < 5)
		return false;
	if (s[0] == 'r')
		out->perms |= MAPS_PERM_READ;
	if (s[1] == 'w')
		out->perms |= MAPS_PERM_WRITE;
	if (s[2] == 'x')
		out->perms |= MAPS_PERM_EXEC;
	if (s[3] == 's')
		out->perms |= MAPS_PERM_SHARED;
	if (s[4] != ' ')
		return false;
	s += 5;
	n -= 5;
	if (!take_hex(&s, &n, ' ', &out->offset) || !take_hex(&s, &n, ':', &major) ||
	    !take_hex(&s, &n, ' ', &minor) || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	out->dev_major = (uint32_t)major;
	out->dev_minor = (uint32_t)minor;
	size_t t = token_len(s, n, ' ');
	if (t == 0 || !rt_parse_u64(s, t, &out->inode))
		return false;
	s += t;
	n -= t;
	while (n > 0 && *s == ' ') {
		s++;
		n--;
	}
	out->path = s;
	out->path_len = n;
	return true;
}

bool maps_next(const char *text, size_t len, size_t *pos, struct maps_entry *out)
{
	while (*pos < len) {
		const char *line = text + *pos;
		const char *nl = rt_memchr(line, '\n', len - *pos);
		size_t line_len = nl != NULL ? (size_t)(nl - line) : len - *pos;
		*pos += line_len + (nl != NULL ? 1 : 0);
		if (maps_parse_line(line, line_len, out))
			return true;
	}
	return false;
}

uint32_t maps_elf_flags(const struct maps_entry *e)
{
	return ((e->perms & MAPS_PERM_READ) ? PF_R : 0u) | ((e->perms & MAPS_PERM_WRITE) ? PF_W : 0u) |
	       ((e->perms & MAPS_PERM_EXEC) ? PF_X : 0u);
}
