/* Directory listing with getdents64 into the iterator's own buffer. */
#include "rt/rt.h"
#include "rt/sys.h"

/* Bytes of a record before its name. */
#define RECORD_HEADER __builtin_offsetof(struct sys_dirent64, name)

long rt_dir_open(struct rt_dir *d, int dirfd, const char *path, uint32_t max_reads)
{
	d->pos = d->len = 0;
	d->reads = 0;
	d->max_reads = max_reads;
	d->error = 0;
	long fd = sys_openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	d->fd = fd < 0 ? -1 : (int)fd;
	return fd < 0 ? fd : 0;
}

const char *rt_dir_next(struct rt_dir *d)
{
	if (d->fd < 0)
		return NULL;
	for (;;) {
		if (d->pos < d->len) {
			const struct sys_dirent64 *e = (const void *)(d->buf + d->pos);
			if (d->len - d->pos <= RECORD_HEADER || e->reclen <= RECORD_HEADER ||
			    e->reclen > d->len - d->pos) {
				d->pos = d->len; /* malformed: drop the rest of this read */
				continue;
			}
			d->pos += e->reclen;
			return e->name;
		}
		if (d->reads >= d->max_reads)
			return NULL;
		d->reads++;
		long n = sys_getdents64(d->fd, d->buf, sizeof(d->buf));
		if (n < 0)
			d->error = n;
		if (n <= 0 || (size_t)n > sizeof(d->buf))
			return NULL;
		d->pos = 0;
		d->len = (size_t)n;
	}
}

void rt_dir_close(struct rt_dir *d)
{
	if (d->fd >= 0)
		(void)sys_close(d->fd);
	d->fd = -1;
}
