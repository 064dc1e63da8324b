/* Raw Linux system calls for a library that must not touch the host's errno.
 *
 * Contract: every wrapper returns the kernel's raw result; a value in
 * [-4095, -1] is -errno.  Nothing here reads or writes libc state, so every
 * function is async-signal-safe.  Only kernel UAPI headers are included.
 */
#ifndef STOWAWAY_RT_SYS_H
#define STOWAWAY_RT_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <asm/unistd.h>
#include <linux/types.h>
#include <linux/time.h>
#include <linux/signal.h>
#include <linux/fcntl.h>
#include <linux/errno.h>
#include <linux/mman.h>
#include <linux/futex.h>
#include <linux/stat.h>
#include <linux/uio.h>

#include "rt/rt.h"

#include "rt/arch.h"

/* True when a raw syscall result encodes an error. */
#define SYS_IS_ERR(r) ((unsigned long)(r) > (unsigned long)-4096L)

/* Only system calls that every supported architecture has (aarch64 has no
 * open, fork, poll...: openat, clone, ppoll instead). */
static inline long sys_call6(long n, long a, long b, long c, long d, long e, long f)
{
	return arch_syscall6(n, a, b, c, d, e, f);
}

#define SYS0(n) sys_call6((n), 0, 0, 0, 0, 0, 0)
#define SYS1(n, a) sys_call6((n), (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b) sys_call6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c) sys_call6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) sys_call6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS5(n, a, b, c, d, e) \
	sys_call6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)
#define SYS6(n, a, b, c, d, e, f) \
	sys_call6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* Files */
static inline long sys_openat(int dirfd, const char *path, int flags, int mode)
{
	return SYS4(__NR_openat, dirfd, path, flags, mode);
}
static inline long sys_open(const char *path, int flags, int mode)
{
	return sys_openat(AT_FDCWD, path, flags | O_CLOEXEC, mode);
}
static inline long sys_close(int fd) { return SYS1(__NR_close, fd); }
/* Descriptor tables (close_range 5.9, pidfd_open 5.3, pidfd_getfd 5.6: the
 * numbers are the same on every architecture). */
#define SYS_CLONE_FILES 0x400
#define SYS_CLOSE_RANGE_UNSHARE 2u
static inline long sys_unshare(unsigned long flags) { return SYS1(__NR_unshare, flags); }
static inline long sys_close_range(unsigned first, unsigned last, unsigned flags)
{
	return SYS3(436 /* __NR_close_range */, first, last, flags);
}
static inline long sys_pidfd_open(long pid, unsigned flags)
{
	return SYS2(434 /* __NR_pidfd_open */, pid, flags);
}
static inline long sys_pidfd_getfd(int pidfd, int fd, unsigned flags)
{
	return SYS3(438 /* __NR_pidfd_getfd */, pidfd, fd, flags);
}
static inline long sys_read(int fd, void *buf, size_t n) { return SYS3(__NR_read, fd, buf, n); }
static inline long sys_write(int fd, const void *buf, size_t n)
{
	return SYS3(__NR_write, fd, buf, n);
}
static inline long sys_pread(int fd, void *buf, size_t n, int64_t off)
{
	return SYS4(__NR_pread64, fd, buf, n, off);
}
static inline long sys_lseek(int fd, int64_t off, int whence)
{
	return SYS3(__NR_lseek, fd, off, whence);
}
static inline long sys_fsync(int fd) { return SYS1(__NR_fsync, fd); }
static inline long sys_renameat(int olddir, const char *oldp, int newdir, const char *newp)
{
	return SYS5(__NR_renameat2, olddir, oldp, newdir, newp, 0);
}
static inline long sys_linkat(int olddir, const char *oldp, int newdir, const char *newp, int flags)
{
	return SYS5(__NR_linkat, olddir, oldp, newdir, newp, flags);
}
static inline long sys_unlinkat(int dirfd, const char *path, int flags)
{
	return SYS3(__NR_unlinkat, dirfd, path, flags);
}
static inline long sys_mkdirat(int dirfd, const char *path, int mode)
{
	return SYS3(__NR_mkdirat, dirfd, path, mode);
}
static inline long sys_getdents64(int fd, void *buf, size_t n)
{
	return SYS3(__NR_getdents64, fd, buf, n);
}
/* One record of getdents64's output (the kernel's linux_dirent64). */
struct sys_dirent64 {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};
static inline long sys_fchmod(int fd, int mode) { return SYS2(__NR_fchmod, fd, mode); }
static inline long sys_faccessat(int dirfd, const char *path, int mode)
{
	return SYS3(__NR_faccessat, dirfd, path, mode);
}
static inline long sys_readlinkat(int dirfd, const char *path, char *buf, size_t n)
{
	return SYS4(__NR_readlinkat, dirfd, path, buf, n);
}
static inline long sys_fcntl(int fd, int cmd, long arg) { return SYS3(__NR_fcntl, fd, cmd, arg); }
static inline long sys_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st)
{
	return SYS5(__NR_statx, dirfd, path, flags, mask, st);
}
/* fstatat into the kernel's struct stat of this architecture (<asm/stat.h>,
 * which clashes with libc's: included only where used, hence void *). */
static inline long sys_newfstatat(int dirfd, const char *path, void *kernel_stat, int flags)
{
	return SYS4(__NR_newfstatat, dirfd, path, kernel_stat, flags);
}

/* Memory */
static inline void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, int64_t off)
{
	return (void *)SYS6(__NR_mmap, addr, len, prot, flags, fd, off);
}
static inline long sys_munmap(void *addr, size_t len) { return SYS2(__NR_munmap, addr, len); }
static inline long sys_mprotect(void *addr, size_t len, int prot)
{
	return SYS3(__NR_mprotect, addr, len, prot);
}
static inline long sys_madvise(void *addr, size_t len, int advice)
{
	return SYS3(__NR_madvise, addr, len, advice);
}

/* Processes and threads */
static inline long sys_getpid(void) { return SYS0(__NR_getpid); }
static inline long sys_getppid(void) { return SYS0(__NR_getppid); }
/* Copies n bytes at addr in process pid (ours too) into dst through the
 * kernel, so an unmapped address fails instead of faulting.  Bytes copied
 * (short if the range ends in a hole) or -errno. */
static inline long sys_read_memory(int pid, void *dst, uint64_t addr, size_t n)
{
	struct iovec local = { dst, n };
	struct iovec remote = { (void *)(uintptr_t)addr, n };
	return sys_call6(__NR_process_vm_readv, pid, (long)&local, 1, (long)&remote, 1, 0);
}
/* The same for n ranges in one call, copied in order (local[i] from
 * remote[i], equal lengths): total bytes copied or -errno. */
static inline long sys_read_memory_ranges(int pid, const struct iovec *local,
					  const struct iovec *remote, unsigned long n)
{
	return sys_call6(__NR_process_vm_readv, pid, (long)local, (long)n, (long)remote, (long)n, 0);
}
static inline long sys_gettid(void) { return SYS0(__NR_gettid); }
static inline long sys_getuid(void) { return SYS0(__NR_getuid); }
static inline long sys_geteuid(void) { return SYS0(__NR_geteuid); }
static inline long sys_getgid(void) { return SYS0(__NR_getgid); }
static inline long sys_getegid(void) { return SYS0(__NR_getegid); }
static inline long sys_tgkill(int tgid, int tid, int sig) { return SYS3(__NR_tgkill, tgid, tid, sig); }
static inline long sys_prctl(int op, long a, long b, long c, long d)
{
	return SYS5(__NR_prctl, op, a, b, c, d);
}
static inline long sys_exit_group(int code) { return SYS1(__NR_exit_group, code); }
/* Nanoseconds to a timespec and back. */
static inline struct __kernel_timespec sys_timespec_of_ns(uint64_t ns)
{
	struct __kernel_timespec ts = { (long long)(ns / RT_NS_PER_SEC), (long long)(ns % RT_NS_PER_SEC) };
	return ts;
}
static inline uint64_t sys_timespec_ns(const struct __kernel_timespec *ts)
{
	return (uint64_t)ts->tv_sec * RT_NS_PER_SEC + (uint64_t)ts->tv_nsec;
}
static inline long sys_futex(volatile int *uaddr, int op, int val, const struct __kernel_timespec *ts)
{
	return SYS6(__NR_futex, uaddr, op, val, ts, 0, 0);
}
static inline long sys_sched_yield(void) { return SYS0(__NR_sched_yield); }
static inline long sys_getrandom(void *buf, size_t n, unsigned flags)
{
	return SYS3(__NR_getrandom, buf, n, flags);
}
static inline long sys_uname(void *buf) { return SYS1(__NR_uname, buf); }
static inline long sys_getrusage(int who, void *ru) { return SYS2(__NR_getrusage, who, ru); }

/* Time */
static inline long sys_clock_gettime(int clk, struct __kernel_timespec *ts)
{
	return SYS2(__NR_clock_gettime, clk, ts);
}
static inline long sys_clock_nanosleep(int clk, int flags, const struct __kernel_timespec *req,
				       struct __kernel_timespec *rem)
{
	return SYS4(__NR_clock_nanosleep, clk, flags, req, rem);
}

/* Signals and timers.  The kernel's sigaction layout, not libc's. */
struct sys_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
static inline long sys_rt_sigaction(int sig, const struct sys_sigaction *act, struct sys_sigaction *old)
{
	return SYS4(__NR_rt_sigaction, sig, act, old, sizeof(uint64_t));
}
static inline long sys_rt_sigprocmask(int how, const uint64_t *set, uint64_t *old)
{
	return SYS4(__NR_rt_sigprocmask, how, set, old, sizeof(uint64_t));
}
/* Kernel sigevent for SIGEV_THREAD_ID timers. */
struct sys_sigevent {
	uint64_t value;
	int signo;
	int notify;
	int tid;
	int pad[11];
};
#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif
struct sys_itimerspec {
	struct __kernel_timespec interval;
	struct __kernel_timespec value;
};
static inline long sys_timer_create(int clk, struct sys_sigevent *sev, int *timerid)
{
	return SYS3(__NR_timer_create, clk, sev, timerid);
}
static inline long sys_timer_settime(int id, int flags, const struct sys_itimerspec *v,
				     struct sys_itimerspec *old)
{
	return SYS4(__NR_timer_settime, id, flags, v, old);
}
static inline long sys_timer_delete(int id) { return SYS1(__NR_timer_delete, id); }
static inline long sys_timer_getoverrun(int id) { return SYS1(__NR_timer_getoverrun, id); }

/* The kernel's siginfo of a POSIX timer signal (64-bit layout). */
struct sys_timer_siginfo {
	int signo;
	int err;
	int code; /* SYS_SI_TIMER */
	int pad;
	int timer_id;
	int overrun;
	uint64_t value; /* sigev_value */
};
#define SYS_SI_TIMER (-2)

/* The CPU-time clock of thread tid (any thread of this process), in the
 * kernel's clockid encoding (what pthread_getcpuclockid returns). */
static inline int sys_thread_cpu_clock(int tid) { return (int)((~(unsigned)tid << 3) | 6u); }

/* Sockets */
static inline long sys_socket(int domain, int type, int proto)
{
	return SYS3(__NR_socket, domain, type, proto);
}
static inline long sys_connect(int fd, const void *addr, unsigned len)
{
	return SYS3(__NR_connect, fd, addr, len);
}
static inline long sys_sendto(int fd, const void *buf, size_t n, int flags)
{
	return SYS6(__NR_sendto, fd, buf, n, flags, 0, 0);
}
static inline long sys_recvfrom(int fd, void *buf, size_t n, int flags)
{
	return SYS6(__NR_recvfrom, fd, buf, n, flags, 0, 0);
}
static inline long sys_setsockopt(int fd, int level, int opt, const void *val, unsigned len)
{
	return SYS5(__NR_setsockopt, fd, level, opt, val, len);
}
static inline long sys_getsockopt(int fd, int level, int opt, void *val, unsigned *len)
{
	return SYS5(__NR_getsockopt, fd, level, opt, val, len);
}
static inline long sys_ppoll(void *fds, unsigned long nfds, const struct __kernel_timespec *ts)
{
	return SYS5(__NR_ppoll, fds, nfds, ts, 0, sizeof(uint64_t));
}
static inline long sys_shutdown(int fd, int how) { return SYS2(__NR_shutdown, fd, how); }

#endif
