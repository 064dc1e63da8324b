/* Lock contention sampling.
 *
 * Which acquisitions are checked.  Knowing whether an acquisition is
 * contended takes a trylock before the blocking call, and glibc's trylock
 * costs more than its lock; an uncontended lock/unlock pair is ~11 ns, so
 * even that is far from free.  The interposed entry points (lock_hooks.c,
 * only in the .so) therefore forward most acquisitions untouched: each
 * thread counts down acquisitions (lock_countdown in its alloc_thread slot,
 * keyed by the thread pointer), and only when the count runs out is the
 * acquisition "checked": tried first, and, if the try fails, the blocking
 * call timed and offered to lock_contended() below.  The countdown is drawn
 * geometric with mean K (lock_every, a power of two), so every acquisition
 * is checked with probability 1/K whatever happened before: a sequence of
 * independent coin flips, which no periodic locking pattern can alias
 * with.  K adapts per thread to the rate of its acquisitions, so that
 * checking (a trylock, a clock read, a logarithm: ~250 ns) costs a bounded
 * share of any thread's time: each check reads the monotonic clock, and a
 * check less than LOCK_CHECK_INTERVAL_NS/2 (50 us) after the thread's
 * previous one doubles K (up to STOWAWAY_LOCK_CHECK_EVERY, default 65536),
 * one more than twice the interval after it divides K by about
 * gap/interval (down to 1).  A thread that acquires rarely, or waits long
 * for its locks, keeps K = 1 and has every acquisition checked; a thread
 * in a hot uncontended loop settles near one check per 100 us.  Adapting K
 * to contention instead (halve or reset it when a check finds the lock
 * taken) failed where glibc lets the unlocking thread take its mutex
 * straight back: K grew during a thread's run of free acquisitions, and
 * its rare long waits were checked with a small probability and a huge
 * weight.
 *
 * Time still passes unseen between checks: a thread whose K grew in a hot
 * loop and that then waits milliseconds per acquisition would reach its
 * next check only K acquisitions later.  So the sampler thread advances an
 * epoch every 10 ms tick (lock_hot.epoch, a word the hooks load anyway),
 * and a thread's first acquisition after a tick is checked for certain
 * (weight 1); its K then adapts to the long gap since its previous check.
 *
 * Unbiased: whether an acquisition is checked, and with what probability
 * (1 after a tick, else 1/K), depends only on what happened before it,
 * never on its own outcome, so weighting a checked acquisition by the
 * inverse of that probability keeps every total unbiased
 * (E[checked * weight] = 1 for each acquisition).  A thread without a
 * slot checks every acquisition (weight 1).
 *
 * Sampling a checked contended acquisition of weight W (K, or 1 after a
 * tick): a Poisson process over the waited time of mean R/W nanoseconds
 * (R = STOWAWAY_LOCK_SAMPLE_NS, default 10 ms; at least 1).  A wait of w
 * ns is sampled with probability p = 1 - exp(-wW/R) and recorded with
 * weight W/p: lock-acquire += W/p and lock-acquire-wait += wW/p, unbiased
 * per acquisition.  Overall an acquisition waiting w is sampled with
 * probability p/W, about w/R while w << R/W: about one sample per R of
 * waiting, as if every acquisition were checked, and at most one in W
 * acquisitions.  The uniform draws come from one global counter through a
 * mixing function.
 *
 * Hold time: every checked acquisition (contended or not: a sample of all
 * acquisitions, each with a known chance 1/weight) is remembered in a
 * small lock-free table keyed by (lock address, thread pointer) with its
 * time and weight; no stack is taken then.  At the matching unlock its
 * hold h is sampled the same way as waits, with probability
 * q = 1 - exp(-h*weight/R), and when sampled recorded with the stack of
 * the unlock (the stack holding the lock at that moment: for the usual
 * lock ... unlock in one function, the function that held it):
 * lock-release += weight/q and lock-release-hold += h*weight/q, unbiased
 * estimates of all releases and all held time.  (The holds of sampled
 * contended acquisitions alone would estimate the holds of contended
 * acquisitions only: how many acquisitions find their lock free changes
 * with scheduling, by several points of the hold shares.)  An
 * unlock reads one global count of outstanding checked holds, and only
 * when it is not zero the calling thread's own count (lock_held) before
 * searching the table.  A mutex released inside pthread_cond_wait stays
 * "held" until the interposed unlock: its hold time includes the
 * condition wait.
 *
 * Label "lock name": the writable data symbol (.symtab, else .dynsym, of
 * the modules mapped when the collector started) that contains the lock's
 * address, as "symbol" or "symbol+offset", C++ names demangled; otherwise
 * the address in hex.  The pthread objects themselves are never read
 * (their layouts differ between glibc and musl).
 */
#ifndef STOWAWAY_COLLECT_LOCK_H
#define STOWAWAY_COLLECT_LOCK_H

#include "collect/alloc.h"
#include "config/config.h"
#include "profile/profile.h"
#include "rt/rt.h"

/* ---- the collector, as driven by collect.c ---- */

/* Enables sampling (cfg->kinds has SW_KIND_LOCK); reads
 * STOWAWAY_LOCK_SAMPLE_NS and STOWAWAY_LOCK_CHECK_EVERY and indexes the
 * data symbols for lock names.  0 or -errno (-EINVAL: kind not enabled). */
int lock_collector_start(const struct sw_config *cfg, struct recorder *rec);
/* New acquisitions are not sampled after this; releases of sampled ones
 * still are (until they are all released). */
void lock_collector_stop(void);
/* The sampler thread's tick (every 10 ms): each thread checks its next
 * acquisition; a slice of the held table is swept of stale entries. */
void lock_collector_tick(void);
/* In a fork child: forgets the holds of the parent's threads. */
void lock_collector_after_fork_child(void);
/* The sampling mean in nanoseconds: the pprof period of the lock profile. */
uint64_t lock_collector_period(void);

#define LOCK_DEFAULT_SAMPLE_NS 10000000u /* 10 ms of waiting per sample */
#define LOCK_DEFAULT_CHECK_EVERY 65536u  /* STOWAWAY_LOCK_CHECK_EVERY */
#define LOCK_MAX_CHECK_EVERY (1u << 20)
/* Each thread aims at one checked acquisition per this much time. */
#define LOCK_CHECK_INTERVAL_NS 100000u

/* ---- hot state read by the hooks ---- */
struct lock_hot {
	/* 0: off.  While sampling, the sampler tick count (never 0). */
	_Atomic uint32_t epoch;
	atomic_int held;     /* sampled acquisitions not yet released */
	atomic_int robust;   /* robust mutexes known (LOCK_ROBUST_ALL: too many) */
};
#define LOCK_ROBUST_ALL 0x40000000
/* Hidden: the hooks load it straight, not through the GOT. */
extern struct lock_hot lock_hot __attribute__((visibility("hidden")));

/* 0 while the collector is off, else the current epoch. */
static inline uint32_t lock_epoch(void)
{
	return atomic_load_explicit(&lock_hot.epoch, memory_order_relaxed);
}

/* While sampling (epoch != 0): true when this acquisition is not checked:
 * the calling thread's slot is at its home position, it has checked an
 * acquisition since the last tick, and its countdown has not run out.
 * False sends the hook to lock_check_begin(epoch), which settles the
 * other cases (slot elsewhere or missing, new tick, countdown out). */
static inline bool lock_skip_check(uint32_t epoch)
{
	uintptr_t tp = rt_thread_pointer();
	struct alloc_thread *t = &alloc_threads[alloc_thread_hash(tp)];
	if (RT_UNLIKELY(atomic_load_explicit(&t->key, memory_order_relaxed) != tp))
		return false;
	if (RT_UNLIKELY(t->lock_epoch != epoch))
		return false;
	return RT_LIKELY(--t->lock_countdown > 0);
}

/* After lock_skip_check(epoch) said false, with the same epoch: 0 when
 * the acquisition is not checked after all, else the inverse of its
 * probability of being checked (its weight): 1 for the first acquisition
 * after a tick, else K.  A checked acquisition ends with lock_check_end. */
uint32_t lock_check_begin(uint32_t epoch);
/* The checked acquisition is over (now_ns: the monotonic time, 0: read
 * it): adapts the calling thread's K and draws its next countdown.
 * Returns the time used. */
uint64_t lock_check_end(uint64_t now_ns);

/* False when no sampled acquisition is outstanding: unlock just forwards. */
static inline bool lock_release_maybe(void)
{
	return RT_UNLIKELY(atomic_load_explicit(&lock_hot.held, memory_order_relaxed) != 0);
}

/* Robust mutexes are never tried first: glibc's trylock on a robust mutex
 * in the "not recoverable" state returns ENOTRECOVERABLE but leaves the
 * mutex locked (every later lock would then block instead of failing).
 * pthread_mutex_init with a robust attribute registers the address here,
 * destroy or a non-robust init removes it; a full table makes every mutex
 * acquisition bypass the try (and the sampler).  A robust mutex shared
 * with another process that initialized it is not seen. */
static inline bool lock_robust_maybe(void)
{
	return RT_UNLIKELY(atomic_load_explicit(&lock_hot.robust, memory_order_relaxed) != 0);
}
bool lock_robust_is(const void *mutex);
void lock_robust_add(const void *mutex);
void lock_robust_remove(const void *mutex);

/* A checked contended acquisition of `lock` that waited wait_ns and
 * succeeded; `every`: its weight from lock_check_begin.  `ra`: the hook's
 * return address (where the kept stack starts).  May record lock-acquire. */
void lock_contended(const void *lock, uint64_t wait_ns, uint32_t every, uintptr_t ra);
/* Any checked acquisition of `lock` that succeeded at acquired_ns
 * (monotonic): its hold is tracked until the calling thread releases it. */
void lock_acquired(const void *lock, uint64_t acquired_ns, uint32_t every);
/* A new thread starts: holds left in the table under its thread pointer by
 * a dead thread (`slot`: from alloc_thread_started) are forgotten. */
void lock_thread_started(struct alloc_thread *slot);
/* True when the calling thread holds `lock` from a checked acquisition
 * (lock-free; the unlock hook reads the clock only then). */
bool lock_held_by_self(const void *lock);
/* The calling thread releases `lock` at released_ns (taken before the
 * next unlock was called); may record the hold, with the stack from `ra`
 * (the unlock hook's return address) on.  Call after forwarding the
 * unlock. */
void lock_released(const void *lock, uint64_t released_ns, uintptr_t ra);


/* ---- pure functions (exposed for tests) ---- */

/* Decision for one acquisition that waited wait_ns, given a uniform draw
 * u in [0, 2^64): true with probability 1 - exp(-wait/mean), the chance
 * that a Poisson process of mean mean_ns places a point in the wait (its
 * inverse is sample_weight(wait_ns, mean_ns), the sample's weight). */
bool lock_sample_decide(uint64_t wait_ns, uint64_t mean_ns, uint64_t u);

/* The mean of the waiting-time sampling for an acquisition checked with
 * probability 1/every: R/every, at least 1. */
uint64_t lock_wait_mean(uint64_t sample_ns, uint32_t every);

/* A countdown of acquisitions until the next checked one: geometric with
 * mean `every` (a power of two), >= 1, from a uniform u in (0, 1]. */
int32_t lock_draw_countdown(uint32_t every, double u);

/* A thread's next K after a check gap_ns after its previous one: doubled
 * (up to max) below half of LOCK_CHECK_INTERVAL_NS, divided by about
 * gap/interval (down to 1) above twice it, else unchanged. */
uint32_t lock_next_every(uint32_t every, uint64_t gap_ns, uint32_t max);

/* Writes the name of the data symbol containing addr ("name" or
 * "name+0x10", demangled), else "0x<hex address>", into out[cap]. */
struct data_symbol_index;
void lock_name_format(const struct data_symbol_index *idx, uint64_t addr, char *out, size_t cap);

#endif
