/* Whole-file reads (for /proc) and complete writes. */
#include "rt/rt.h"
#include "rt/sys.h"

long rt_read_file(const char *path, char *buf, size_t cap)
{
	if (cap == 0)
		return -EINVAL;
	long fd = sys_open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	size_t got = 0;
	long r = 0;
	while (got < cap - 1) {
		r = sys_read((int)fd, buf + got, cap - 1 - got);
		if (r == -EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	(void)sys_close((int)fd);
	buf[got] = 0;
	return r < 0 ? r : (long)got;
}

long rt_write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	size_t done = 0;
	int stalls = 0; /* a full non-blocking pipe must not make us spin forever */
	while (done < n) {
		long r = sys_write(fd, p + done, n - done);
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN || r == 0) {
			if (++stalls > 100)
				return r ? r : -EIO;
			(void)sys_sched_yield();
			continue;
		}
		if (r < 0)
			return r;
		done += (size_t)r;
	}
	return 0;
}
