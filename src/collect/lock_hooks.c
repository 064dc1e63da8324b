/* The interposed pthread mutex and rwlock entry points.  Exported; only in
 * the .so.
 *
 * Every entry point forwards to the next definition (dlsym(RTLD_NEXT)), so
 * the C library keeps all of the locking semantics: the pthread objects are
 * passed through untouched and never read (layouts differ between glibc
 * and musl), and every return code is the next library's.
 *
 * While the lock collector runs, most acquisitions are forwarded just the
 * same; one in K per thread on average is "checked" (lock.h says which).
 * A checked acquisition first calls the next library's trylock.  0 (and
 * EOWNERDEAD, which acquires a robust mutex) returns at once: the
 * uncontended path.  EBUSY means contended: the blocking call is timed and
 * offered to the sampler.  Any other result (EAGAIN, EINVAL,
 * ENOTRECOVERABLE...) changed nothing, so the blocking call is made untimed
 * and its result returned: the caller sees exactly what it would have seen
 * (EDEADLK of an error-checking mutex, ETIMEDOUT, a recursive count, ...).
 * A trylock that succeeds where the blocking call would also have succeeded
 * at once is indistinguishable to the caller.
 *
 * Entry points that only forward keep no stack frame: a load of the
 * epoch (0 while the collector is off; while on, also the thread's slot
 * and countdown), then a jump to the next definition; everything else is
 * out of line and reached by tail calls.
 */
#include "collect/lock.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/sys.h"

#define CALLER_RA() ((uintptr_t)__builtin_return_address(0))

typedef int (*lock_fn)(void *);
typedef int (*timed_fn)(void *, const void *);
typedef int (*clock_fn)(void *, int, const void *);

enum next_id {
	MUTEX_LOCK,
	MUTEX_TRYLOCK,
	MUTEX_TIMEDLOCK,
	MUTEX_CLOCKLOCK,
	MUTEX_UNLOCK,
	RW_RDLOCK,
	RW_TRYRDLOCK,
	RW_TIMEDRDLOCK,
	RW_CLOCKRDLOCK,
	RW_WRLOCK,
	RW_TRYWRLOCK,
	RW_TIMEDWRLOCK,
	RW_CLOCKWRLOCK,
	RW_UNLOCK,
	MUTEX_INIT,
	MUTEX_DESTROY,
	MUTEXATTR_GETROBUST,
	NEXT_COUNT
};

static const char *const next_names[NEXT_COUNT] = {
	[MUTEX_LOCK] = "pthread_mutex_lock",
	[MUTEX_TRYLOCK] = "pthread_mutex_trylock",
	[MUTEX_TIMEDLOCK] = "pthread_mutex_timedlock",
	[MUTEX_CLOCKLOCK] = "pthread_mutex_clocklock",
	[MUTEX_UNLOCK] = "pthread_mutex_unlock",
	[RW_RDLOCK] = "pthread_rwlock_rdlock",
	[RW_TRYRDLOCK] = "pthread_rwlock_tryrdlock",
	[RW_TIMEDRDLOCK] = "pthread_rwlock_timedrdlock",
	[RW_CLOCKRDLOCK] = "pthread_rwlock_clockrdlock",
	[RW_WRLOCK] = "pthread_rwlock_wrlock",
	[RW_TRYWRLOCK] = "pthread_rwlock_trywrlock",
	[RW_TIMEDWRLOCK] = "pthread_rwlock_timedwrlock",
	[RW_CLOCKWRLOCK] = "pthread_rwlock_clockwrlock",
	[RW_UNLOCK] = "pthread_rwlock_unlock",
	[MUTEX_INIT] = "pthread_mutex_init",
	[MUTEX_DESTROY] = "pthread_mutex_destroy",
	[MUTEXATTR_GETROBUST] = "pthread_mutexattr_getrobust",
};

/* The next definitions, found on first use (or by the constructor below).
 * dlsym may be called by several threads at once: it returns the same
 * address to each. */
static _Atomic(void *) next_fn[NEXT_COUNT];

#define ERR_BUSY 16
#define ERR_INVAL 22
#define ERR_OWNERDEAD 130

__attribute__((noinline)) static void *resolve(enum next_id id)
{
	void *f = hook_next(next_names[id]);
	if (f)
		atomic_store_explicit(&next_fn[id], f, memory_order_release);
	else
		rt_log_once(RT_LOG_ERROR, "lock hooks: a pthread lock function has no next "
					  "definition; calls to it fail with EINVAL");
	return f;
}

static inline void *next_of(enum next_id id)
{
	void *f = atomic_load_explicit(&next_fn[id], memory_order_relaxed);
	return RT_LIKELY(f != NULL) ? f : resolve(id);
}

/* Calls through a pointer not resolved yet (before the constructor below,
 * or a function the C library lacks).  Out of line, and reached by a tail
 * call, so the entry points below keep no stack frame: forwarding is a
 * flag test and one indirect jump. */
__attribute__((noinline)) static int call_lock_unresolved(enum next_id id, void *l)
{
	void *p = resolve(id);
	lock_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f ? f(l) : ERR_INVAL;
}

__attribute__((noinline)) static int call_timed_unresolved(enum next_id id, void *l,
							   const void *abstime)
{
	void *p = resolve(id);
	timed_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f ? f(l, abstime) : ERR_INVAL;
}

__attribute__((noinline)) static int call_clock_unresolved(enum next_id id, void *l, int clk,
							   const void *abstime)
{
	void *p = resolve(id);
	clock_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f ? f(l, clk, abstime) : ERR_INVAL;
}

/* dlsym returns a data pointer; POSIX specifies its conversion to a
 * function pointer, done without a cast between the two kinds. */
static inline int call_lock(enum next_id id, void *l)
{
	void *p = atomic_load_explicit(&next_fn[id], memory_order_relaxed);
	if (RT_UNLIKELY(p == NULL))
		return call_lock_unresolved(id, l);
	lock_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f(l);
}

static inline int call_timed(enum next_id id, void *l, const void *abstime)
{
	void *p = atomic_load_explicit(&next_fn[id], memory_order_relaxed);
	if (RT_UNLIKELY(p == NULL))
		return call_timed_unresolved(id, l, abstime);
	timed_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f(l, abstime);
}

static inline int call_clock(enum next_id id, void *l, int clk, const void *abstime)
{
	void *p = atomic_load_explicit(&next_fn[id], memory_order_relaxed);
	if (RT_UNLIKELY(p == NULL))
		return call_clock_unresolved(id, l, clk, abstime);
	clock_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f(l, clk, abstime);
}

/* One acquisition: which try and which blocking call, with the blocking
 * call's extra arguments (clock, deadline). */
struct acquire {
	enum next_id try_id, block_id;
};

static inline int block(const struct acquire *a, void *l, int clk, const void *abstime)
{
	switch (a->block_id) {
	case MUTEX_TIMEDLOCK:
	case RW_TIMEDRDLOCK:
	case RW_TIMEDWRLOCK:
		return call_timed(a->block_id, l, abstime);
	case MUTEX_CLOCKLOCK:
	case RW_CLOCKRDLOCK:
	case RW_CLOCKWRLOCK:
		return call_clock(a->block_id, l, clk, abstime);
	default:
		return call_lock(a->block_id, l);
	}
}

/* A checked acquisition (lock.h): try first; if the try finds the lock
 * taken, time the blocking call and offer it to the sampler.  Reached by a
 * tail call from the entry point, so our caller's return address is ra. */
__attribute__((noinline)) static int acquire_checked(const struct acquire *a, void *l, int clk,
						     const void *abstime, uint32_t epoch,
						     uintptr_t ra)
{
	uint32_t every = lock_check_begin(epoch);
	if (every == 0)
		return block(a, l, clk, abstime);
	int r;
	uint64_t t;
	if (a->try_id == MUTEX_TRYLOCK && lock_robust_maybe() && lock_robust_is(l)) {
		/* Some robust mutex is known: this one may be it. */
		r = block(a, l, clk, abstime);
		t = lock_check_end(0);
	} else {
		r = call_lock(a->try_id, l);
		if (r == ERR_BUSY) {
			uint64_t t0 = rt_monotonic_ns();
			r = block(a, l, clk, abstime);
			t = lock_check_end(0);
			if ((r == 0 || r == ERR_OWNERDEAD) && t > t0)
				lock_contended(l, t - t0, every, ra);
		} else {
			t = lock_check_end(0);
			if (r != 0 && r != ERR_OWNERDEAD)
				r = block(a, l, clk, abstime);
		}
	}
	if (r == 0 || r == ERR_OWNERDEAD)
		lock_acquired(l, t, every);
	return r;
}

/* The whole hot path, inlined into each entry point with constant ids: a
 * load of the epoch and a jump to the next lock; while sampling, also the
 * calling thread's slot and countdown.  Only tail calls, so no stack
 * frame. */
#define ACQUIRE(acq, clk, abstime)                                              \
	do {                                                                    \
		uint32_t epoch_ = lock_epoch();                                 \
		if (RT_LIKELY(epoch_ == 0) || RT_LIKELY(lock_skip_check(epoch_))) \
			return block(&(acq), l, (clk), (abstime));              \
		return acquire_checked(&(acq), l, (clk), (abstime), epoch_, CALLER_RA()); \
	} while (0)

static const struct acquire mutex_lock = { MUTEX_TRYLOCK, MUTEX_LOCK };
static const struct acquire mutex_timedlock = { MUTEX_TRYLOCK, MUTEX_TIMEDLOCK };
static const struct acquire mutex_clocklock = { MUTEX_TRYLOCK, MUTEX_CLOCKLOCK };
static const struct acquire rw_rdlock = { RW_TRYRDLOCK, RW_RDLOCK };
static const struct acquire rw_timedrdlock = { RW_TRYRDLOCK, RW_TIMEDRDLOCK };
static const struct acquire rw_clockrdlock = { RW_TRYRDLOCK, RW_CLOCKRDLOCK };
static const struct acquire rw_wrlock = { RW_TRYWRLOCK, RW_WRLOCK };
static const struct acquire rw_timedwrlock = { RW_TRYWRLOCK, RW_TIMEDWRLOCK };
static const struct acquire rw_clockwrlock = { RW_TRYWRLOCK, RW_CLOCKWRLOCK };

/* Reached by a tail call from the entry point: our caller's return
 * address is ra. */
__attribute__((noinline)) static int release_tracked(enum next_id id, void *l, uintptr_t ra)
{
	if (!lock_held_by_self(l))
		return call_lock(id, l);
	uint64_t t = rt_monotonic_ns();
	int r = call_lock(id, l);
	if (r == 0)
		lock_released(l, t, ra);
	return r;
}

SW_EXPORT int pthread_mutex_init(void *l, const void *attr);
SW_EXPORT int pthread_mutex_destroy(void *l);
SW_EXPORT int pthread_mutex_lock(void *l);
SW_EXPORT int pthread_mutex_timedlock(void *l, const void *abstime);
SW_EXPORT int pthread_mutex_clocklock(void *l, int clk, const void *abstime);
SW_EXPORT int pthread_mutex_unlock(void *l);
SW_EXPORT int pthread_rwlock_rdlock(void *l);
SW_EXPORT int pthread_rwlock_timedrdlock(void *l, const void *abstime);
SW_EXPORT int pthread_rwlock_clockrdlock(void *l, int clk, const void *abstime);
SW_EXPORT int pthread_rwlock_wrlock(void *l);
SW_EXPORT int pthread_rwlock_timedwrlock(void *l, const void *abstime);
SW_EXPORT int pthread_rwlock_clockwrlock(void *l, int clk, const void *abstime);
SW_EXPORT int pthread_rwlock_unlock(void *l);

SW_EXPORT int pthread_mutex_lock(void *l) { ACQUIRE(mutex_lock, 0, NULL); }

SW_EXPORT int pthread_mutex_timedlock(void *l, const void *abstime)
{
	ACQUIRE(mutex_timedlock, 0, abstime);
}

SW_EXPORT int pthread_mutex_clocklock(void *l, int clk, const void *abstime)
{
	ACQUIRE(mutex_clocklock, clk, abstime);
}

SW_EXPORT int pthread_mutex_unlock(void *l)
{
	if (RT_LIKELY(!lock_release_maybe()))
		return call_lock(MUTEX_UNLOCK, l);
	return release_tracked(MUTEX_UNLOCK, l, CALLER_RA());
}

SW_EXPORT int pthread_rwlock_rdlock(void *l) { ACQUIRE(rw_rdlock, 0, NULL); }

SW_EXPORT int pthread_rwlock_timedrdlock(void *l, const void *abstime)
{
	ACQUIRE(rw_timedrdlock, 0, abstime);
}

SW_EXPORT int pthread_rwlock_clockrdlock(void *l, int clk, const void *abstime)
{
	ACQUIRE(rw_clockrdlock, clk, abstime);
}

SW_EXPORT int pthread_rwlock_wrlock(void *l) { ACQUIRE(rw_wrlock, 0, NULL); }

SW_EXPORT int pthread_rwlock_timedwrlock(void *l, const void *abstime)
{
	ACQUIRE(rw_timedwrlock, 0, abstime);
}

SW_EXPORT int pthread_rwlock_clockwrlock(void *l, int clk, const void *abstime)
{
	ACQUIRE(rw_clockwrlock, clk, abstime);
}

SW_EXPORT int pthread_rwlock_unlock(void *l)
{
	if (RT_LIKELY(!lock_release_maybe()))
		return call_lock(RW_UNLOCK, l);
	return release_tracked(RW_UNLOCK, l, CALLER_RA());
}

typedef int (*init_fn)(void *, const void *);
typedef int (*getrobust_fn)(const void *, int *);

/* Robust mutexes are registered so acquisitions never try them (lock.h). */
SW_EXPORT int pthread_mutex_init(void *l, const void *attr)
{
	void *p = next_of(MUTEX_INIT);
	init_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	int r = f ? f(l, attr) : ERR_INVAL;
	if (r != 0)
		return r;
	int robust = 0;
	if (attr) {
		p = next_of(MUTEXATTR_GETROBUST);
		getrobust_fn g;
		__builtin_memcpy(&g, &p, sizeof(p));
		/* Without the query, assume robust: never wrong, only unsampled. */
		if (!g || g(attr, &robust) != 0)
			robust = 1;
	}
	if (robust)
		lock_robust_add(l);
	else if (lock_robust_maybe())
		lock_robust_remove(l);
	return 0;
}

SW_EXPORT int pthread_mutex_destroy(void *l)
{
	int r = call_lock(MUTEX_DESTROY, l);
	if (r == 0 && lock_robust_maybe())
		lock_robust_remove(l);
	return r;
}

/* Resolve before the program's own constructors start threads. */
__attribute__((constructor(101))) static void lock_hooks_resolve_early(void)
{
	static const enum next_id always[] = { MUTEX_LOCK, MUTEX_TRYLOCK, MUTEX_UNLOCK,
					       RW_RDLOCK,  RW_TRYRDLOCK,  RW_WRLOCK,
					       RW_TRYWRLOCK, RW_UNLOCK };
	for (size_t i = 0; i < RT_ARRAY_LEN(always); i++)
		(void)next_of(always[i]);
}
