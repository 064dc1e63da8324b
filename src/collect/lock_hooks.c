/* The interposed pthread mutex and rwlock entry points.  Exported; only in
 * the .so.
 *
 * Every entry point forwards to the next definition (dlsym(RTLD_NEXT)), so
 * the C library keeps all of the locking semantics: the pthread objects are
 * passed through untouched and never read (layouts differ between glibc
 * and musl), and every return code is the next library's.
 *
 * While the lock collector runs, an acquisition first calls the next
 * library's trylock.  0 (and EOWNERDEAD, which acquires a robust mutex)
 * returns at once: the uncontended path.  EBUSY means contended: the
 * blocking call is timed and offered to the sampler.  Any other result
 * (EAGAIN, EINVAL, ENOTRECOVERABLE...) changed nothing, so the blocking
 * call is made untimed and its result returned: the caller sees exactly
 * what it would have seen (EDEADLK of an error-checking mutex, ETIMEDOUT,
 * a recursive count, ...).  A trylock that succeeds where the blocking call
 * would also have succeeded at once is indistinguishable to the caller.
 */
#include "collect/lock.h"
#include "rt/host.h"
#include "rt/sys.h"

#define SW_EXPORT __attribute__((visibility("default")))
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
	void *f = dlsym ? dlsym(HOST_RTLD_NEXT, next_names[id]) : NULL;
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

/* dlsym returns a data pointer; POSIX specifies its conversion to a
 * function pointer, done without a cast between the two kinds. */
static inline int call_lock(enum next_id id, void *l)
{
	void *p = next_of(id);
	lock_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f ? f(l) : ERR_INVAL;
}

static inline int call_timed(enum next_id id, void *l, const void *abstime)
{
	void *p = next_of(id);
	timed_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f ? f(l, abstime) : ERR_INVAL;
}

static inline int call_clock(enum next_id id, void *l, int clk, const void *abstime)
{
	void *p = next_of(id);
	clock_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f ? f(l, clk, abstime) : ERR_INVAL;
}

/* One acquisition: which try and which blocking call, with their extra
 * arguments. */
struct acquire {
	enum next_id try_id, block_id;
	int clk;
	const void *abstime;
};

static inline int block(const struct acquire *a, void *l)
{
	switch (a->block_id) {
	case MUTEX_TIMEDLOCK:
	case RW_TIMEDRDLOCK:
	case RW_TIMEDWRLOCK:
		return call_timed(a->block_id, l, a->abstime);
	case MUTEX_CLOCKLOCK:
	case RW_CLOCKRDLOCK:
	case RW_CLOCKWRLOCK:
		return call_clock(a->block_id, l, a->clk, a->abstime);
	default:
		return call_lock(a->block_id, l);
	}
}

__attribute__((noinline)) static int acquire_contended(const struct acquire *a, void *l,
						       uintptr_t ra)
{
	uint64_t t0 = rt_monotonic_ns();
	int r = block(a, l);
	if (r == 0 || r == ERR_OWNERDEAD) {
		uint64_t t1 = rt_monotonic_ns();
		if (t1 > t0)
			lock_contended(l, t1 - t0, ra);
	}
	return r;
}

/* Inlined into each entry point with constant ids: the uncontended path is
 * a flag test, the next trylock and a test of its result. */
static inline __attribute__((always_inline)) int acquire_sampled(const struct acquire *a, void *l,
								 uintptr_t ra)
{
	int r = call_lock(a->try_id, l);
	if (RT_LIKELY(r == 0) || r == ERR_OWNERDEAD)
		return r;
	if (r != ERR_BUSY)
		return block(a, l);
	return acquire_contended(a, l, ra);
}

__attribute__((noinline)) static int release_tracked(enum next_id id, void *l)
{
	if (!lock_held_by_self(l))
		return call_lock(id, l);
	uint64_t t = rt_monotonic_ns();
	int r = call_lock(id, l);
	if (r == 0)
		lock_released(l, t);
	return r;
}

#define ACQUIRE(try_, block_, clk_, abstime_)                                  \
	do {                                                                   \
		const struct acquire a_ = { try_, block_, clk_, abstime_ };    \
		if (RT_LIKELY(!lock_sampling()))                               \
			return block(&a_, l);                                  \
		return acquire_sampled(&a_, l, CALLER_RA());                   \
	} while (0)

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

SW_EXPORT int pthread_mutex_lock(void *l) { ACQUIRE(MUTEX_TRYLOCK, MUTEX_LOCK, 0, NULL); }

SW_EXPORT int pthread_mutex_timedlock(void *l, const void *abstime)
{
	ACQUIRE(MUTEX_TRYLOCK, MUTEX_TIMEDLOCK, 0, abstime);
}

SW_EXPORT int pthread_mutex_clocklock(void *l, int clk, const void *abstime)
{
	ACQUIRE(MUTEX_TRYLOCK, MUTEX_CLOCKLOCK, clk, abstime);
}

SW_EXPORT int pthread_mutex_unlock(void *l)
{
	if (RT_LIKELY(!lock_release_maybe()))
		return call_lock(MUTEX_UNLOCK, l);
	return release_tracked(MUTEX_UNLOCK, l);
}

SW_EXPORT int pthread_rwlock_rdlock(void *l) { ACQUIRE(RW_TRYRDLOCK, RW_RDLOCK, 0, NULL); }

SW_EXPORT int pthread_rwlock_timedrdlock(void *l, const void *abstime)
{
	ACQUIRE(RW_TRYRDLOCK, RW_TIMEDRDLOCK, 0, abstime);
}

SW_EXPORT int pthread_rwlock_clockrdlock(void *l, int clk, const void *abstime)
{
	ACQUIRE(RW_TRYRDLOCK, RW_CLOCKRDLOCK, clk, abstime);
}

SW_EXPORT int pthread_rwlock_wrlock(void *l) { ACQUIRE(RW_TRYWRLOCK, RW_WRLOCK, 0, NULL); }

SW_EXPORT int pthread_rwlock_timedwrlock(void *l, const void *abstime)
{
	ACQUIRE(RW_TRYWRLOCK, RW_TIMEDWRLOCK, 0, abstime);
}

SW_EXPORT int pthread_rwlock_clockwrlock(void *l, int clk, const void *abstime)
{
	ACQUIRE(RW_TRYWRLOCK, RW_CLOCKWRLOCK, clk, abstime);
}

SW_EXPORT int pthread_rwlock_unlock(void *l)
{
	if (RT_LIKELY(!lock_release_maybe()))
		return call_lock(RW_UNLOCK, l);
	return release_tracked(RW_UNLOCK, l);
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
