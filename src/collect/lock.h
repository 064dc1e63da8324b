/* Lock contention sampling (issue #13).
 *
 * The interposed pthread mutex and rwlock entry points (lock_hooks.c, only
 * in the .so) try the lock first and forward: an uncontended acquisition
 * costs one flag test and the next library's trylock.  Only when the try
 * fails is the blocking call timed, and the acquisition offered to
 * lock_contended() below.
 *
 * Sampling: a Poisson process of mean R nanoseconds over the waited time
 * (R = STOWAWAY_LOCK_SAMPLE_NS, default 10 ms).  A wait of w ns contains a
 * sample point with probability p = 1 - exp(-w/R); each contended
 * acquisition is drawn independently with that probability and, when
 * sampled, recorded with weight 1/p: lock-acquire += 1/p and
 * lock-acquire-wait += w/p, unbiased per acquisition.  No per-thread state
 * is needed: the uniform draws come from one global counter through a
 * mixing function.
 *
 * Hold time: a sampled acquisition is remembered in a small lock-free table
 * keyed by (lock address, thread pointer) with its stack.  The matching
 * unlock records lock-release += 1/p and lock-release-hold += hold/p on
 * the stack that acquired (and so held) the lock.  Hold times of
 * uncontended acquisitions are not measured (nothing is done on that path).
 * A mutex released inside pthread_cond_wait stays "held" until the
 * interposed unlock: its hold time includes the condition wait.
 *
 * Label "lock name": the writable data symbol (.symtab, else .dynsym, of
 * the modules mapped when the collector started) that contains the lock's
 * address, as "symbol" or "symbol+offset", C++ names demangled; otherwise
 * the address in hex.  The pthread objects themselves are never read
 * (their layouts differ between glibc and musl).
 */
#ifndef STOWAWAY_COLLECT_LOCK_H
#define STOWAWAY_COLLECT_LOCK_H

#include "config/config.h"
#include "profile/profile.h"
#include "rt/rt.h"

/* ---- the collector, as driven by collect.c ---- */

/* Enables sampling (cfg->kinds has SW_KIND_LOCK); reads
 * STOWAWAY_LOCK_SAMPLE_NS and indexes the data symbols for lock names.
 * 0 or -errno (-EINVAL: kind not enabled). */
int lock_collector_start(const struct sw_config *cfg, struct recorder *rec);
/* New acquisitions are no longer sampled; releases of sampled ones still
 * are (until they are all released). */
void lock_collector_stop(void);
/* In a fork child: forgets the holds of the parent's threads. */
void lock_collector_after_fork_child(void);
/* The sampling mean in nanoseconds: the pprof period of the lock profile. */
uint64_t lock_collector_period(void);

#define LOCK_DEFAULT_SAMPLE_NS 10000000u /* 10 ms of waiting per sample */

/* ---- hot state read by the hooks ---- */
struct lock_hot {
	atomic_int sampling; /* contended acquisitions are timed and sampled */
	atomic_int held;     /* sampled acquisitions not yet released */
	atomic_int robust;   /* robust mutexes known (LOCK_ROBUST_ALL: too many) */
};
#define LOCK_ROBUST_ALL 0x40000000
extern struct lock_hot lock_hot;

static inline bool lock_sampling(void)
{
	return RT_UNLIKELY(atomic_load_explicit(&lock_hot.sampling, memory_order_relaxed) != 0);
}

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

/* A contended acquisition of `lock` that waited wait_ns and succeeded.
 * `ra`: the hook's return address (where the kept stack starts).  May
 * record lock-acquire and remember the lock as held. */
void lock_contended(const void *lock, uint64_t wait_ns, uintptr_t ra);
/* True when the calling thread holds `lock` from a sampled acquisition
 * (lock-free; the unlock hook reads the clock only then). */
bool lock_held_by_self(const void *lock);
/* The calling thread releases `lock` at released_ns (taken before the
 * next unlock was called); records the hold if the acquisition was
 * sampled.  Call after forwarding the unlock. */
void lock_released(const void *lock, uint64_t released_ns);


/* ---- pure functions (exposed for tests) ---- */

/* Decision for one acquisition that waited wait_ns, given a uniform draw
 * u in [0, 2^64): true with probability 1 - exp(-wait/mean), the chance
 * that a Poisson process of mean mean_ns places a point in the wait (its
 * inverse is sample_weight(wait_ns, mean_ns), the sample's weight). */
bool lock_sample_decide(uint64_t wait_ns, uint64_t mean_ns, uint64_t u);

/* Data-symbol index: sorted [start, start+size) ranges with names. */
struct lock_symbol {
	uint64_t start, size;
	uint32_t name; /* offset into the index's names */
};
struct lock_symbol_index {
	struct lock_symbol *syms;
	uint32_t n, cap;
	struct rt_buf names; /* NUL-terminated names, back to back */
};
/* Writes the name of the data symbol containing addr ("name" or
 * "name+0x10", demangled), else "0x<hex address>", into out[cap]. */
void lock_name_format(const struct lock_symbol_index *idx, uint64_t addr, char *out, size_t cap);
/* Adds the writable OBJECT symbols of one ELF image loaded with `bias`
 * (runtime = link-time + bias) to a growing index; call lock_index_finish
 * once after the last image.  False when out of memory. */
struct elf_image;
bool lock_index_add_image(struct lock_symbol_index *idx, const struct elf_image *img,
			  uint64_t bias);
void lock_index_finish(struct lock_symbol_index *idx);
void lock_index_free(struct lock_symbol_index *idx);

#endif
