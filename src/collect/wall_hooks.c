/* Interposed blocking entry points for the wall profiler (wall.h): each
 * publishes its own frame and state while it waits, so the sampler takes
 * its stack from our thread instead of signalling it, and blocks our signal
 * for the call when a signal may be in flight.  Exported; only in the .so.
 *
 * Each forwards to the next definition (dlsym(RTLD_NEXT)), found on first
 * use; while the wall profiler is off a call costs two loads, their tests
 * and a jump (WALL_HOOK_WITH).  Types are spelled without libc headers:
 * every pointer argument is passed through untouched; sigset_t is 128
 * bytes in glibc and musl alike.
 */
#include "collect/wall.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/sys.h"

#define SIGSET_BYTES 128

/* The publishing function's own pc, sp and frame pointer, taken together
 * so that the unwind tables of that pc describe that sp, its return address
 * into the program (two callers at the same depth share the frame; reached
 * by a sibling call, the function returns straight to the program), and the
 * entry of the C library's function it calls (the stack's leaf frame). */
#define WALL_HERE(f, fn)                                                       \
	do {                                                                   \
		ARCH_HERE((f).pc, (f).sp, (f).fp);                             \
		(f).ra = (uint64_t)(uintptr_t)__builtin_return_address(0);     \
		(f).callee = (uint64_t)(uintptr_t)(fn);                        \
	} while (0)

/* A copy of a wait's signal mask that keeps our signal blocked. */
struct wait_mask {
	uint8_t bytes[SIGSET_BYTES];
};
static const void *mask_with_ours(struct wait_mask *copy, const void *mask)
{
	int sig = wall_signal();
	if (!mask || sig <= 0)
		return mask;
	rt_memcpy(copy->bytes, mask, sizeof(copy->bytes));
	copy->bytes[(sig - 1) / 8] |= (uint8_t)(1u << ((sig - 1) % 8));
	return copy->bytes;
}

/* One interposed call `ret name params`, in three functions that reach
 * one another by sibling calls (jumps), so each starts with the program's
 * return address and stack, as though the program had called it:
 *  - the exported entry loads the next definition and the flag: while wall
 *    profiling is off it jumps to the C library's function (no frame, no
 *    register saved), else to published_NAME; before the next definition
 *    is known, to first_NAME;
 *  - first_NAME finds it (returning `fail` when there is none), then
 *    forwards or goes on to published_NAME as the entry does;
 *  - published_NAME publishes "blocked here" around the call: its own
 *    frame (WALL_HERE), whose return address is the program's.  The flag
 *    was tested on the way in; the profiler stopping since is the same
 *    race as stopping during the call, which wall_call_enter/leave allow.
 * `place` holds the next definition, `fd` is the descriptor waited on (-1:
 * none); the published call passes `call_args`, which may use mask_copy_
 * (a struct wait_mask). */
#define WALL_HOOK_AT(place, ret, name, fail, state, fd, params, args, call_args)               \
	typedef ret(*name##_fn) params;                                                        \
	__attribute__((noinline)) static ret published_##name params                           \
	{                                                                                      \
		void *sym_ = atomic_load_explicit(&(place), memory_order_acquire);             \
		if (!sym_) /* never: entered once it was found */                              \
			return fail;                                                           \
		name##_fn next;                                                                \
		HOOK_FN(next, sym_);                                                           \
		struct wait_mask mask_copy_ __attribute__((unused));                           \
		struct wall_call call_;                                                        \
		WALL_HERE(call_.frame, next);                                                  \
		wall_call_enter(&call_, (state), (fd));                                        \
		ret result_ = next call_args;                                                  \
		wall_call_leave(&call_);                                                       \
		return result_;                                                                \
	}                                                                                      \
	__attribute__((noinline, cold)) static ret first_##name params                         \
	{                                                                                      \
		void *sym_ = hook_next_cached(&(place), #name);                                \
		if (!sym_)                                                                     \
			return fail;                                                           \
		if (wall_hooks_active())                                                       \
			return published_##name args;                                          \
		name##_fn next;                                                                \
		HOOK_FN(next, sym_);                                                           \
		return next args;                                                              \
	}                                                                                      \
	SW_EXPORT ret name params;                                                             \
	SW_EXPORT ret name params                                                              \
	{                                                                                      \
		void *sym_ = atomic_load_explicit(&(place), memory_order_acquire);             \
		if (__builtin_expect(!sym_, 0))                                                \
			return first_##name args;                                              \
		if (__builtin_expect(wall_hooks_active(), 0))                                  \
			return published_##name args;                                          \
		name##_fn next;                                                                \
		HOOK_FN(next, sym_);                                                           \
		return next args;                                                              \
	}

#define WALL_HOOK_WITH(ret, name, fail, state, fd, params, args, call_args)                    \
	static _Atomic(void *) next_##name;                                                    \
	WALL_HOOK_AT(next_##name, ret, name, fail, state, fd, params, args, call_args)

/* A call that waits with no signal mask of its own. */
#define WALL_HOOK(ret, name, fail, state, fd, params, args)                                    \
	WALL_HOOK_WITH(ret, name, fail, state, fd, params, args, args)
/* One of the calls made most, its next definition in wall_hook_line. */
#define WALL_HOOK_HOT(hot, ret, name, fail, state, fd, params, args)                           \
	WALL_HOOK_AT(wall_hook_line.next[hot], ret, name, fail, state, fd, params, args, args)

/* The calls servers' request loops make most (event loops, socket and pipe
 * I/O): their hooks read one cache line. */
enum { HOT_READ, HOT_WRITE, HOT_WRITEV, HOT_RECV, HOT_SEND, HOT_EPOLL_WAIT, HOT_POLL, HOT_COUNT };
_Static_assert(HOT_COUNT == WALL_HOT_HOOKS, "wall_hook_line has a slot per hot hook");
/* A call whose signal mask (its argument `sigmask`) must keep our signal
 * blocked while it is published: `call_args` passes the copy. */
#define WALL_HOOK_MASKED WALL_HOOK_WITH

WALL_HOOK(int, nanosleep, -1, WALL_STATE_SLEEPING, -1,
	  (const void *req, void *rem),
	  (req, rem))

WALL_HOOK(int, clock_nanosleep, ENOSYS, WALL_STATE_SLEEPING, -1,
	  (int clk, int flags, const void *req, void *rem),
	  (clk, flags, req, rem))

WALL_HOOK(int, usleep, -1, WALL_STATE_SLEEPING, -1,
	  (unsigned usec),
	  (usec))

WALL_HOOK(unsigned, sleep, sec, WALL_STATE_SLEEPING, -1,
	  (unsigned sec),
	  (sec))

WALL_HOOK(int, pause, -1, WALL_STATE_SLEEPING, -1,
	  (void),
	  ())

WALL_HOOK_HOT(HOT_READ, long, read, -1, WALL_STATE_IO, fd,
	  (int fd, void *buf, size_t n),
	  (fd, buf, n))

WALL_HOOK(long, readv, -1, WALL_STATE_IO, fd,
	  (int fd, const void *iov, int n),
	  (fd, iov, n))

WALL_HOOK_HOT(HOT_WRITE, long, write, -1, WALL_STATE_IO, fd,
	  (int fd, const void *buf, size_t n),
	  (fd, buf, n))

WALL_HOOK_HOT(HOT_WRITEV, long, writev, -1, WALL_STATE_IO, fd,
	  (int fd, const void *iov, int n),
	  (fd, iov, n))

WALL_HOOK_HOT(HOT_RECV, long, recv, -1, WALL_STATE_NETWORK, fd,
	  (int fd, void *buf, size_t n, int flags),
	  (fd, buf, n, flags))

WALL_HOOK(long, recvfrom, -1, WALL_STATE_NETWORK, fd,
	  (int fd, void *buf, size_t n, int flags, void *addr, unsigned *alen),
	  (fd, buf, n, flags, addr, alen))

WALL_HOOK(long, recvmsg, -1, WALL_STATE_NETWORK, fd,
	  (int fd, void *msg, int flags),
	  (fd, msg, flags))

WALL_HOOK_HOT(HOT_SEND, long, send, -1, WALL_STATE_NETWORK, fd,
	  (int fd, const void *buf, size_t n, int flags),
	  (fd, buf, n, flags))

WALL_HOOK(long, sendto, -1, WALL_STATE_NETWORK, fd,
	  (int fd, const void *buf, size_t n, int flags, const void *addr, unsigned alen),
	  (fd, buf, n, flags, addr, alen))

WALL_HOOK(long, sendmsg, -1, WALL_STATE_NETWORK, fd,
	  (int fd, const void *msg, int flags),
	  (fd, msg, flags))

WALL_HOOK(int, accept, -1, WALL_STATE_NETWORK, fd,
	  (int fd, void *addr, unsigned *alen),
	  (fd, addr, alen))

WALL_HOOK(int, accept4, -1, WALL_STATE_NETWORK, fd,
	  (int fd, void *addr, unsigned *alen, int flags),
	  (fd, addr, alen, flags))

WALL_HOOK(int, connect, -1, WALL_STATE_NETWORK, fd,
	  (int fd, const void *addr, unsigned alen),
	  (fd, addr, alen))

WALL_HOOK_HOT(HOT_EPOLL_WAIT, int, epoll_wait, -1, WALL_STATE_WAITING, -1,
	  (int epfd, void *events, int max, int timeout),
	  (epfd, events, max, timeout))

WALL_HOOK_MASKED(int, epoll_pwait, -1, WALL_STATE_WAITING, -1,
	  (int epfd, void *events, int max, int timeout, const void *sigmask),
	  (epfd, events, max, timeout, sigmask),
	  (epfd, events, max, timeout, mask_with_ours(&mask_copy_, sigmask)))

WALL_HOOK_HOT(HOT_POLL, int, poll, -1, WALL_STATE_WAITING, -1,
	  (void *fds, unsigned long nfds, int timeout),
	  (fds, nfds, timeout))

WALL_HOOK_MASKED(int, ppoll, -1, WALL_STATE_WAITING, -1,
	  (void *fds, unsigned long nfds, const void *ts, const void *sigmask),
	  (fds, nfds, ts, sigmask),
	  (fds, nfds, ts, mask_with_ours(&mask_copy_, sigmask)))

WALL_HOOK(int, select, -1, WALL_STATE_WAITING, -1,
	  (int nfds, void *rd, void *wr, void *ex, void *tv),
	  (nfds, rd, wr, ex, tv))

WALL_HOOK_MASKED(int, pselect, -1, WALL_STATE_WAITING, -1,
	  (int nfds, void *rd, void *wr, void *ex, const void *ts, const void *sigmask),
	  (nfds, rd, wr, ex, ts, sigmask),
	  (nfds, rd, wr, ex, ts, mask_with_ours(&mask_copy_, sigmask)))

WALL_HOOK_MASKED(int, sigsuspend, -1, WALL_STATE_WAITING, -1,
	  (const void *sigmask),
	  (sigmask),
	  (mask_with_ours(&mask_copy_, sigmask)))

WALL_HOOK(int, sem_wait, -1, WALL_STATE_WAITING, -1,
	  (void *sem),
	  (sem))

WALL_HOOK(int, sem_timedwait, -1, WALL_STATE_WAITING, -1,
	  (void *sem, const void *abstime),
	  (sem, abstime))

WALL_HOOK(int, pthread_cond_wait, ENOSYS, WALL_STATE_WAITING, -1,
	  (void *cond, void *mutex),
	  (cond, mutex))

WALL_HOOK(int, pthread_cond_timedwait, ENOSYS, WALL_STATE_WAITING, -1,
	  (void *cond, void *mutex, const void *abstime),
	  (cond, mutex, abstime))

WALL_HOOK(int, waitpid, -1, WALL_STATE_WAITING, -1,
	  (int pid, int *status, int options),
	  (pid, status, options))

WALL_HOOK(int, wait, -1, WALL_STATE_WAITING, -1,
	  (int *status),
	  (status))

WALL_HOOK(int, wait4, -1, WALL_STATE_WAITING, -1,
	  (int pid, int *status, int options, void *rusage),
	  (pid, status, options, rusage))

WALL_HOOK(int, waitid, -1, WALL_STATE_WAITING, -1,
	  (int idtype, unsigned id, void *info, int options),
	  (idtype, id, info, options))
