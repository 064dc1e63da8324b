/* Whole-file reads (for /proc), complete writes, file status. */
#include <asm/stat.h>

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

long rt_self_exe_path(char *buf, size_t cap)
{
	if (cap == 0)
		return -EINVAL;
	long n = sys_readlinkat(AT_FDCWD, "/proc/self/exe", buf, cap - 1);
	buf[n > 0 ? n : 0] = 0;
	return n;
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

/* Set once statx was refused: later calls go to fstatat at once. */
static atomic_int statx_refused;

long rt_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st)
{
	if (!atomic_load_explicit(&statx_refused, memory_order_relaxed)) {
		long r = sys_statx(dirfd, path, flags, mask, st);
		/* A file's own refusal is EACCES; EPERM here is a filter's. */
		if (r != -ENOSYS && r != -EPERM)
			return r;
		if (atomic_exchange_explicit(&statx_refused, 1, memory_order_relaxed) == 0)
			rt_debug("statx refused (error %ld): file status through fstatat", -r);
	}
	struct stat k;
	rt_memset(&k, 0, sizeof(k));
	long r = sys_newfstatat(dirfd, path, &k, flags);
	if (r != 0)
		return r;
	uint64_t dev = (uint64_t)k.st_dev, rdev = (uint64_t)k.st_rdev;
	rt_memset(st, 0, sizeof(*st));
	st->stx_mask = STATX_BASIC_STATS;
	st->stx_blksize = (uint32_t)k.st_blksize;
	st->stx_nlink = (uint32_t)k.st_nlink;
	st->stx_uid = (uint32_t)k.st_uid;
	st->stx_gid = (uint32_t)k.st_gid;
	st->stx_mode = (uint16_t)k.st_mode;
	st->stx_ino = (uint64_t)k.st_ino;
	st->stx_size = (uint64_t)k.st_size;
	st->stx_blocks = (uint64_t)k.st_blocks;
	st->stx_atime.tv_sec = (int64_t)k.st_atime;
	st->stx_atime.tv_nsec = (uint32_t)k.st_atime_nsec;
	st->stx_mtime.tv_sec = (int64_t)k.st_mtime;
	st->stx_mtime.tv_nsec = (uint32_t)k.st_mtime_nsec;
	st->stx_ctime.tv_sec = (int64_t)k.st_ctime;
	st->stx_ctime.tv_nsec = (uint32_t)k.st_ctime_nsec;
	/* The kernel's device encoding (12-bit major, 20-bit minor, split). */
	st->stx_dev_major = (uint32_t)(((dev >> 8) & 0xfffu) | ((dev >> 32) & ~0xfffu));
	st->stx_dev_minor = (uint32_t)((dev & 0xffu) | ((dev >> 12) & ~0xffu));
	st->stx_rdev_major = (uint32_t)(((rdev >> 8) & 0xfffu) | ((rdev >> 32) & ~0xfffu));
	st->stx_rdev_minor = (uint32_t)((rdev & 0xffu) | ((rdev >> 12) & ~0xffu));
	return 0;
}
