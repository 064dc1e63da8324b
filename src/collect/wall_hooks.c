/* Interposed blocking entry points for the wall profiler (wall.h): each
 * publishes its own frame and state while it waits, so the sampler takes
 * its stack from our thread instead of signalling it, and blocks our signal
 * for the call when a signal may be in flight.  Exported; only in the .so.
 *
 * Each forwards to the next definition (dlsym(RTLD_NEXT)), found on first
 * use.  While the wall profiler is off a call costs one flag test.  Types
 * are spelled without libc headers: every pointer argument is passed
 * through untouched; sigset_t is 128 bytes in glibc and musl alike.
 */
#include "collect/wall.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/sys.h"

#define SIGSET_BYTES 128

/* The wrapper's own pc, sp and frame pointer, taken together so that the
 * unwind tables of that pc describe that sp, its return address into the
 * caller (two callers at the same depth share the frame), and the entry of
 * the C library's function it calls (the stack's leaf frame). */
#define WALL_HERE(f, fn)                                                       \
	do {                                                                   \
		ARCH_HERE((f).pc, (f).sp, (f).fp);                             \
		(f).ra = (uint64_t)(uintptr_t)__builtin_return_address(0);     \
		(f).callee = (uint64_t)(uintptr_t)(fn);                        \
	} while (0)

/* The next definition of `name`, resolved once found. */
#define NEXT_FN(type, name)                                                    \
	static _Atomic(void *) next_##name;                                    \
	static type resolve_##name(void)                                       \
	{                                                                      \
		void *sym = hook_next_cached(&next_##name, #name);             \
		type fn;                                                       \
		HOOK_FN(fn, sym);                                              \
		return fn;                                                     \
	}

/* A copy of a wait's signal mask that keeps our signal blocked. */
struct wait_mask {
	uint8_t bytes[SIGSET_BYTES];
};
static const void *mask_with_ours(const void *mask, struct wait_mask *copy)
{
	int sig = wall_signal();
	if (!mask || sig <= 0)
		return mask;
	rt_memcpy(copy->bytes, mask, sizeof(copy->bytes));
	copy->bytes[(sig - 1) / 8] |= (uint8_t)(1u << ((sig - 1) % 8));
	return copy->bytes;
}

/* The body the waiting wrappers share: forward at once when wall profiling
 * is off; otherwise publish "blocked here" (this frame) around the call.  A
 * macro, not a function: WALL_HERE must capture the wrapper's own frame.
 * `next` is the C library's function that `call` calls. */
#define WALL_WRAP(state, fd, call)                                               \
	do {                                                                     \
		if (!wall_hooks_active())                                        \
			return call;                                             \
		struct wall_frame wrap_frame_;                                   \
		WALL_HERE(wrap_frame_, next);                                    \
		struct wall_call wrap_call_;                                     \
		wall_call_enter(&wrap_call_, &wrap_frame_, (state), (fd));       \
		__typeof__(call) wrap_result_ = call;                            \
		wall_call_leave(&wrap_call_);                                    \
		return wrap_result_;                                             \
	} while (0)

typedef int (*nanosleep_fn)(const void *, void *);
NEXT_FN(nanosleep_fn, nanosleep)
SW_EXPORT int nanosleep(const void *req, void *rem);
SW_EXPORT int nanosleep(const void *req, void *rem)
{
	nanosleep_fn next = resolve_nanosleep();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_SLEEPING, -1, next(req, rem));
}

typedef int (*clock_nanosleep_fn)(int, int, const void *, void *);
NEXT_FN(clock_nanosleep_fn, clock_nanosleep)
SW_EXPORT int clock_nanosleep(int clk, int flags, const void *req, void *rem);
SW_EXPORT int clock_nanosleep(int clk, int flags, const void *req, void *rem)
{
	clock_nanosleep_fn next = resolve_clock_nanosleep();
	if (!next)
		return ENOSYS;
	WALL_WRAP(WALL_STATE_SLEEPING, -1, next(clk, flags, req, rem));
}

typedef int (*usleep_fn)(unsigned);
NEXT_FN(usleep_fn, usleep)
SW_EXPORT int usleep(unsigned usec);
SW_EXPORT int usleep(unsigned usec)
{
	usleep_fn next = resolve_usleep();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_SLEEPING, -1, next(usec));
}

typedef unsigned (*sleep_fn)(unsigned);
NEXT_FN(sleep_fn, sleep)
SW_EXPORT unsigned sleep(unsigned sec);
SW_EXPORT unsigned sleep(unsigned sec)
{
	sleep_fn next = resolve_sleep();
	if (!next)
		return sec;
	WALL_WRAP(WALL_STATE_SLEEPING, -1, next(sec));
}

typedef int (*pause_fn)(void);
NEXT_FN(pause_fn, pause)
SW_EXPORT int pause(void);
SW_EXPORT int pause(void)
{
	pause_fn next = resolve_pause();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_SLEEPING, -1, next());
}

typedef long (*read_fn)(int, void *, size_t);
NEXT_FN(read_fn, read)
SW_EXPORT long read(int fd, void *buf, size_t n);
SW_EXPORT long read(int fd, void *buf, size_t n)
{
	read_fn next = resolve_read();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_IO, fd, next(fd, buf, n));
}

typedef long (*readv_fn)(int, const void *, int);
NEXT_FN(readv_fn, readv)
SW_EXPORT long readv(int fd, const void *iov, int n);
SW_EXPORT long readv(int fd, const void *iov, int n)
{
	readv_fn next = resolve_readv();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_IO, fd, next(fd, iov, n));
}

typedef long (*write_fn)(int, const void *, size_t);
NEXT_FN(write_fn, write)
SW_EXPORT long write(int fd, const void *buf, size_t n);
SW_EXPORT long write(int fd, const void *buf, size_t n)
{
	write_fn next = resolve_write();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_IO, fd, next(fd, buf, n));
}

typedef long (*writev_fn)(int, const void *, int);
NEXT_FN(writev_fn, writev)
SW_EXPORT long writev(int fd, const void *iov, int n);
SW_EXPORT long writev(int fd, const void *iov, int n)
{
	writev_fn next = resolve_writev();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_IO, fd, next(fd, iov, n));
}

typedef long (*recv_fn)(int, void *, size_t, int);
NEXT_FN(recv_fn, recv)
SW_EXPORT long recv(int fd, void *buf, size_t n, int flags);
SW_EXPORT long recv(int fd, void *buf, size_t n, int flags)
{
	recv_fn next = resolve_recv();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, buf, n, flags));
}

typedef long (*recvfrom_fn)(int, void *, size_t, int, void *, unsigned *);
NEXT_FN(recvfrom_fn, recvfrom)
SW_EXPORT long recvfrom(int fd, void *buf, size_t n, int flags, void *addr, unsigned *alen);
SW_EXPORT long recvfrom(int fd, void *buf, size_t n, int flags, void *addr, unsigned *alen)
{
	recvfrom_fn next = resolve_recvfrom();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, buf, n, flags, addr, alen));
}

typedef long (*recvmsg_fn)(int, void *, int);
NEXT_FN(recvmsg_fn, recvmsg)
SW_EXPORT long recvmsg(int fd, void *msg, int flags);
SW_EXPORT long recvmsg(int fd, void *msg, int flags)
{
	recvmsg_fn next = resolve_recvmsg();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, msg, flags));
}

typedef long (*send_fn)(int, const void *, size_t, int);
NEXT_FN(send_fn, send)
SW_EXPORT long send(int fd, const void *buf, size_t n, int flags);
SW_EXPORT long send(int fd, const void *buf, size_t n, int flags)
{
	send_fn next = resolve_send();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, buf, n, flags));
}

typedef long (*sendto_fn)(int, const void *, size_t, int, const void *, unsigned);
NEXT_FN(sendto_fn, sendto)
SW_EXPORT long sendto(int fd, const void *buf, size_t n, int flags, const void *addr, unsigned alen);
SW_EXPORT long sendto(int fd, const void *buf, size_t n, int flags, const void *addr, unsigned alen)
{
	sendto_fn next = resolve_sendto();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, buf, n, flags, addr, alen));
}

typedef long (*sendmsg_fn)(int, const void *, int);
NEXT_FN(sendmsg_fn, sendmsg)
SW_EXPORT long sendmsg(int fd, const void *msg, int flags);
SW_EXPORT long sendmsg(int fd, const void *msg, int flags)
{
	sendmsg_fn next = resolve_sendmsg();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, msg, flags));
}

typedef int (*accept_fn)(int, void *, unsigned *);
NEXT_FN(accept_fn, accept)
SW_EXPORT int accept(int fd, void *addr, unsigned *alen);
SW_EXPORT int accept(int fd, void *addr, unsigned *alen)
{
	accept_fn next = resolve_accept();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, addr, alen));
}

typedef int (*accept4_fn)(int, void *, unsigned *, int);
NEXT_FN(accept4_fn, accept4)
SW_EXPORT int accept4(int fd, void *addr, unsigned *alen, int flags);
SW_EXPORT int accept4(int fd, void *addr, unsigned *alen, int flags)
{
	accept4_fn next = resolve_accept4();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, addr, alen, flags));
}

typedef int (*connect_fn)(int, const void *, unsigned);
NEXT_FN(connect_fn, connect)
SW_EXPORT int connect(int fd, const void *addr, unsigned alen);
SW_EXPORT int connect(int fd, const void *addr, unsigned alen)
{
	connect_fn next = resolve_connect();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_NETWORK, fd, next(fd, addr, alen));
}

typedef int (*epoll_wait_fn)(int, void *, int, int);
NEXT_FN(epoll_wait_fn, epoll_wait)
SW_EXPORT int epoll_wait(int epfd, void *events, int max, int timeout);
SW_EXPORT int epoll_wait(int epfd, void *events, int max, int timeout)
{
	epoll_wait_fn next = resolve_epoll_wait();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(epfd, events, max, timeout));
}

typedef int (*epoll_pwait_fn)(int, void *, int, int, const void *);
NEXT_FN(epoll_pwait_fn, epoll_pwait)
SW_EXPORT int epoll_pwait(int epfd, void *events, int max, int timeout, const void *sigmask);
SW_EXPORT int epoll_pwait(int epfd, void *events, int max, int timeout, const void *sigmask)
{
	epoll_pwait_fn next = resolve_epoll_pwait();
	if (!next)
		return -1;
	if (!wall_hooks_active())
		return next(epfd, events, max, timeout, sigmask);
	struct wait_mask copy;
	struct wall_frame f;
	WALL_HERE(f, next);
	struct wall_call c;
	wall_call_enter(&c, &f, WALL_STATE_WAITING, -1);
	int r = next(epfd, events, max, timeout, mask_with_ours(sigmask, &copy));
	wall_call_leave(&c);
	return r;
}

typedef int (*poll_fn)(void *, unsigned long, int);
NEXT_FN(poll_fn, poll)
SW_EXPORT int poll(void *fds, unsigned long nfds, int timeout);
SW_EXPORT int poll(void *fds, unsigned long nfds, int timeout)
{
	poll_fn next = resolve_poll();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(fds, nfds, timeout));
}

typedef int (*ppoll_fn)(void *, unsigned long, const void *, const void *);
NEXT_FN(ppoll_fn, ppoll)
SW_EXPORT int ppoll(void *fds, unsigned long nfds, const void *ts, const void *sigmask);
SW_EXPORT int ppoll(void *fds, unsigned long nfds, const void *ts, const void *sigmask)
{
	ppoll_fn next = resolve_ppoll();
	if (!next)
		return -1;
	if (!wall_hooks_active())
		return next(fds, nfds, ts, sigmask);
	struct wait_mask copy;
	struct wall_frame f;
	WALL_HERE(f, next);
	struct wall_call c;
	wall_call_enter(&c, &f, WALL_STATE_WAITING, -1);
	int r = next(fds, nfds, ts, mask_with_ours(sigmask, &copy));
	wall_call_leave(&c);
	return r;
}

typedef int (*select_fn)(int, void *, void *, void *, void *);
NEXT_FN(select_fn, select)
SW_EXPORT int select(int nfds, void *rd, void *wr, void *ex, void *tv);
SW_EXPORT int select(int nfds, void *rd, void *wr, void *ex, void *tv)
{
	select_fn next = resolve_select();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(nfds, rd, wr, ex, tv));
}

typedef int (*pselect_fn)(int, void *, void *, void *, const void *, const void *);
NEXT_FN(pselect_fn, pselect)
SW_EXPORT int pselect(int nfds, void *rd, void *wr, void *ex, const void *ts, const void *sigmask);
SW_EXPORT int pselect(int nfds, void *rd, void *wr, void *ex, const void *ts, const void *sigmask)
{
	pselect_fn next = resolve_pselect();
	if (!next)
		return -1;
	if (!wall_hooks_active())
		return next(nfds, rd, wr, ex, ts, sigmask);
	struct wait_mask copy;
	struct wall_frame f;
	WALL_HERE(f, next);
	struct wall_call c;
	wall_call_enter(&c, &f, WALL_STATE_WAITING, -1);
	int r = next(nfds, rd, wr, ex, ts, mask_with_ours(sigmask, &copy));
	wall_call_leave(&c);
	return r;
}

typedef int (*sigsuspend_fn)(const void *);
NEXT_FN(sigsuspend_fn, sigsuspend)
SW_EXPORT int sigsuspend(const void *sigmask);
SW_EXPORT int sigsuspend(const void *sigmask)
{
	sigsuspend_fn next = resolve_sigsuspend();
	if (!next)
		return -1;
	if (!wall_hooks_active())
		return next(sigmask);
	struct wait_mask copy;
	struct wall_frame f;
	WALL_HERE(f, next);
	struct wall_call c;
	wall_call_enter(&c, &f, WALL_STATE_WAITING, -1);
	int r = next(mask_with_ours(sigmask, &copy));
	wall_call_leave(&c);
	return r;
}

typedef int (*sem_wait_fn)(void *);
NEXT_FN(sem_wait_fn, sem_wait)
SW_EXPORT int sem_wait(void *sem);
SW_EXPORT int sem_wait(void *sem)
{
	sem_wait_fn next = resolve_sem_wait();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(sem));
}

typedef int (*sem_timedwait_fn)(void *, const void *);
NEXT_FN(sem_timedwait_fn, sem_timedwait)
SW_EXPORT int sem_timedwait(void *sem, const void *abstime);
SW_EXPORT int sem_timedwait(void *sem, const void *abstime)
{
	sem_timedwait_fn next = resolve_sem_timedwait();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(sem, abstime));
}

typedef int (*pthread_cond_wait_fn)(void *, void *);
NEXT_FN(pthread_cond_wait_fn, pthread_cond_wait)
SW_EXPORT int pthread_cond_wait(void *cond, void *mutex);
SW_EXPORT int pthread_cond_wait(void *cond, void *mutex)
{
	pthread_cond_wait_fn next = resolve_pthread_cond_wait();
	if (!next)
		return ENOSYS;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(cond, mutex));
}

typedef int (*pthread_cond_timedwait_fn)(void *, void *, const void *);
NEXT_FN(pthread_cond_timedwait_fn, pthread_cond_timedwait)
SW_EXPORT int pthread_cond_timedwait(void *cond, void *mutex, const void *abstime);
SW_EXPORT int pthread_cond_timedwait(void *cond, void *mutex, const void *abstime)
{
	pthread_cond_timedwait_fn next = resolve_pthread_cond_timedwait();
	if (!next)
		return ENOSYS;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(cond, mutex, abstime));
}

typedef int (*waitpid_fn)(int, int *, int);
NEXT_FN(waitpid_fn, waitpid)
SW_EXPORT int waitpid(int pid, int *status, int options);
SW_EXPORT int waitpid(int pid, int *status, int options)
{
	waitpid_fn next = resolve_waitpid();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(pid, status, options));
}

typedef int (*wait_fn)(int *);
NEXT_FN(wait_fn, wait)
SW_EXPORT int wait(int *status);
SW_EXPORT int wait(int *status)
{
	wait_fn next = resolve_wait();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(status));
}

typedef int (*wait4_fn)(int, int *, int, void *);
NEXT_FN(wait4_fn, wait4)
SW_EXPORT int wait4(int pid, int *status, int options, void *rusage);
SW_EXPORT int wait4(int pid, int *status, int options, void *rusage)
{
	wait4_fn next = resolve_wait4();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(pid, status, options, rusage));
}

typedef int (*waitid_fn)(int, unsigned, void *, int);
NEXT_FN(waitid_fn, waitid)
SW_EXPORT int waitid(int idtype, unsigned id, void *info, int options);
SW_EXPORT int waitid(int idtype, unsigned id, void *info, int options)
{
	waitid_fn next = resolve_waitid();
	if (!next)
		return -1;
	WALL_WRAP(WALL_STATE_WAITING, -1, next(idtype, id, info, options));
}
