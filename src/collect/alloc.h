/* Allocation and live-heap sampling (design.md §6).
 *
 * The interposed malloc family (alloc_hooks.c, only in the .so) calls the
 * inline fast path below on every allocation; everything else lives in
 * alloc.c (also in libcore.a, so it is unit-tested directly).
 *
 * Sampling: each thread counts down bytes from an exponential draw of mean
 * R = cfg->alloc_sample_bytes (a Poisson process over the allocated bytes).
 * An allocation of S bytes that crosses a sample point is recorded with the
 * weight 1/(1-exp(-S/R)), the inverse of its probability of being sampled,
 * so count and bytes are unbiased per allocation.
 *
 * Per-thread state without libc TLS: a fixed open-addressed table keyed by
 * the thread pointer (%fs:0 / tpidr_el0).  A thread that finds no slot is
 * simply not sampled (counted, logged once).  The lock profiler keeps its
 * per-thread countdown in the same slots (the lock_* fields, lock.h).
 *
 * Nesting: allocators call back into the interposed entry points (musl's
 * calloc calls malloc, libstdc++'s operator new calls malloc, glibc's dlsym
 * calls calloc).  Only the outermost call is counted: a thread's slot holds
 * the stack pointer of its outermost hook; a call with a lower stack pointer
 * is nested.  A stale mark (an exception unwound through operator new) heals
 * itself at the next call made from a shallower frame.  A plain operator new
 * whose next definition is known to allocate through our malloc (learned,
 * alloc_hooks.c) sets no mark: that inner malloc counts the bytes instead,
 * once (operator new[] only while they stay short of the sample point), and
 * a sample it takes leaves the operator's frame out of the stack.
 *
 * Live heap: sampled allocations are kept in a bounded table keyed by
 * address, retired by free/realloc/delete (an operator delete learned to
 * free through our free leaves that to free).  A two-level bit filter indexed
 * by a hash of the address lets free dismiss an unsampled pointer with one
 * load; a bit is cleared when the last live entry hashing to it goes.
 */
#ifndef STOWAWAY_COLLECT_ALLOC_H
#define STOWAWAY_COLLECT_ALLOC_H

#include "config/config.h"
#include "profile/profile.h"
#include "rt/rt.h"

/* ---- the collector, as driven by collect.c ---- */

/* Enables sampling for SW_KIND_ALLOC and/or SW_KIND_HEAP per cfg->kinds.
 * 0, or -errno (-ENOMEM: live table; -EINVAL: neither kind enabled). */
int alloc_collector_start(const struct sw_config *cfg, struct recorder *rec);
/* Hooks go back to pure forwarding for new allocations.  Frees keep
 * retiring live entries until the next snapshot, so the final export is
 * still true. */
void alloc_collector_stop(void);
/* Adds the live-heap snapshot (heap-live-samples, heap-live-size, with the
 * allocating stack and thread id) to the finished profile.  After a stop,
 * also empties the live table (nothing is tracked any more). */
void alloc_collector_before_export(struct profile *finished);
/* In a fork child: resets our locks and forgets the parent's threads.  The
 * live table is kept: the child's heap is a copy of the parent's. */
void alloc_collector_after_fork_child(void);
/* From the interposers (alloc_hooks.c), at load: the program's lookup of
 * `name` (malloc, operator new) reaches another definition, at `addr`, not
 * ours (the executable defines it, and the loader binds the executable's
 * definitions before LD_PRELOAD's): no allocation made through it reaches
 * us.  alloc_collector_start says so, naming where it is defined. */
void alloc_note_foreign_binding(const char *name, const void *addr);

/* ---- per-thread state ---- */

#define ALLOC_THREAD_SLOTS 4096u /* power of two */
#define ALLOC_THREAD_PROBES 16u

struct alloc_thread {
	/* Slots start 32-byte aligned (96 bytes in a 64-aligned table): the
	 * first 32 bytes never straddle two cache lines, so what malloc's
	 * unsampled path reads (key, outer_sp, countdown) and what the lock
	 * hooks read together (key, lock_countdown, lock_epoch) is one line. */
	_Alignas(32) _Atomic uintptr_t key; /* thread pointer, 0: free */
	uintptr_t outer_sp;    /* stack pointer of the outermost hook, 0: none */
	int64_t countdown;     /* bytes left until the next sample */
	int32_t lock_countdown; /* lock profile: acquisitions until the next checked one */
	uint32_t lock_epoch;    /* lock profile: the sampler tick of the last checked one */
	atomic_int tid;        /* kernel tid: set when claimed, and by a new thread that reuses the key */
	/* The low 32 bits of the pointer this thread's free last saw while an
	 * operator delete was learning (ALLOC_FREE_LEARNING; alloc_hooks.c). */
	uint32_t free_noted;
	uint64_t countdown_mean; /* the mean it was drawn with (weights use it) */
	struct rt_rng rng;
	/* Bounds of the mapping holding this thread's stack, found on its first
	 * sample, so the unwinder reads the stack directly (0: unknown). */
	uintptr_t stack_lo, stack_hi;
	uint32_t lock_every; /* the mean lock_countdown was drawn with (0: 1) */
	uint32_t lock_held;  /* its checked lock holds not yet released (lock.h) */
	uint64_t lock_last_ns; /* monotonic time of the thread's last checked acquisition */
};

/* 96 bytes: a slot's address is a multiply-add and a shift from its index. */
_Static_assert(sizeof(struct alloc_thread) == 96, "alloc_thread slots stay 96 bytes");
_Static_assert(offsetof(struct alloc_thread, lock_epoch) + sizeof(uint32_t) <= 32,
	       "the hooks' fields of a slot sit in its first 32 bytes");

/* What a free must do besides forwarding (alloc_hot.free_checks bits):
 * look up the live filter, and leave the bootstrap arena's blocks alone
 * (set once the arena has handed one out).  Zero, nearly always without
 * the heap profile, lets free forward after one load. */
#define ALLOC_FREE_RETIRE 1
#define ALLOC_FREE_ARENA 2
/* From this bit up: operator deletes learning whether their next operator
 * frees through our free (alloc_hooks.c); while any is, free notes its
 * pointer in the thread's slot. */
#define ALLOC_FREE_LEARNING 256

/* What every allocation call reads, in one cache line (64-byte aligned):
 * the flags, and the next definitions of the calls made most, the hooks'
 * bootstrap functions until the hooks resolve them. */
struct alloc_hot {
	atomic_int sampling;    /* new allocations are counted down and sampled */
	atomic_int free_checks; /* ALLOC_FREE_* */
	_Atomic(void *(*)(size_t)) next_malloc;
	_Atomic(void (*)(void *)) next_free;
	_Atomic(void *(*)(size_t, size_t)) next_calloc;
	_Atomic(void *(*)(void *, size_t)) next_realloc;
};
extern struct alloc_hot alloc_hot;
/* The hooks' bootstrap allocator (alloc_hooks.c): serves the first
 * allocations, made before the next definitions are known, from an arena. */
void *alloc_boot_malloc(size_t n);
void alloc_boot_free(void *p);
void *alloc_boot_calloc(size_t n, size_t m);
void *alloc_boot_realloc(void *p, size_t n);
extern struct alloc_thread alloc_threads[ALLOC_THREAD_SLOTS];

static inline uint32_t alloc_thread_hash(uintptr_t tp)
{
	return (uint32_t)(((uint64_t)tp * RT_HASH_MUL64) >> 52) & (ALLOC_THREAD_SLOTS - 1u);
}

/* Claims a slot for thread pointer tp (first use, or a full probe window).
 * NULL when the table has no room. */
struct alloc_thread *alloc_thread_claim(uintptr_t tp);

/* A new thread whose thread pointer may be a dead thread's (libc reuses
 * stacks): the slot keyed by it, if any, takes the new thread id (samples
 * read it from the slot instead of asking the kernel each time) and is
 * returned (NULL: none), for lock_thread_started. */
struct alloc_thread *alloc_thread_started(int tid);

/* The calling thread's slot, or NULL. */
static inline struct alloc_thread *alloc_thread_self(void)
{
	uintptr_t tp = rt_thread_pointer();
	uint32_t h = alloc_thread_hash(tp);
	struct alloc_thread *t = &alloc_threads[h];
	if (RT_LIKELY(atomic_load_explicit(&t->key, memory_order_relaxed) == tp))
		return t;
	return alloc_thread_claim(tp);
}

/* The calling thread's slot when it is the slot of its home (the case of
 * nearly every call), without claiming one.  NULL sends the caller to its
 * slow path (first call of the thread, collision). */
static inline struct alloc_thread *alloc_thread_mine(void)
{
	uintptr_t tp = rt_thread_pointer();
	struct alloc_thread *t = &alloc_threads[alloc_thread_hash(tp)];
	if (RT_LIKELY(atomic_load_explicit(&t->key, memory_order_relaxed) == tp))
		return t;
	return NULL;
}

/* Marks the outermost hook of this thread.  Returns false when the call is
 * nested inside another hook of the same thread (do not count it). */
static inline bool alloc_enter(struct alloc_thread *t, uintptr_t sp)
{
	if (t->outer_sp != 0 && sp < t->outer_sp)
		return false;
	t->outer_sp = sp;
	return true;
}

static inline void alloc_leave(struct alloc_thread *t) { t->outer_sp = 0; }

/* True when an allocation of n bytes is not nested and reaches this
 * thread's next sample point. */
static inline bool alloc_countdown(struct alloc_thread *t, size_t n, uintptr_t sp)
{
	if (t->outer_sp != 0 && sp < t->outer_sp)
		return false;
	t->countdown -= (int64_t)n;
	return RT_UNLIKELY(t->countdown <= 0);
}

/* The sampled path: draws the next countdown, unwinds the caller (`ra`: the
 * hook's return address, where the kept stack starts), records alloc-samples
 * and alloc-space, and remembers p as live.  The caller has entered (so any
 * allocation made meanwhile on this thread is nested). */
void alloc_sample(struct alloc_thread *t, void *p, size_t size, uintptr_t ra);
/* The same, for a hook called by a function that is itself an allocation
 * entry point, not the program's code (the next operator new, forwarded to
 * with no frame of ours): `skip` frames from ra on are left out, so the
 * stack starts at that function's caller. */
void alloc_sample_skipping(struct alloc_thread *t, void *p, size_t size, uintptr_t ra,
			   uint32_t skip);

/* ---- sampling math (exposed for tests) ---- */

/* A fresh countdown: ceil of an exponential draw of mean `rate`, >= 1. */
int64_t alloc_draw_countdown(struct rt_rng *rng, uint64_t rate);

/* ---- live heap ---- */

#define ALLOC_LIVE_HOME_BITS 16u
#define ALLOC_LIVE_SLOTS (1u << ALLOC_LIVE_HOME_BITS) /* half of it usable */
#define ALLOC_LIVE_MAX (ALLOC_LIVE_SLOTS / 2u)
/* The table starts this small and doubles when half full, so a small live
 * set stays in a few cache-resident pages (a 3 MiB table cost a cache and
 * TLB miss, often a page fault, per sample). */
#define ALLOC_LIVE_MIN_SLOTS (1u << 10)
/* The filter, two levels of one bit per bucket of address hashes, set while
 * a live entry hashes there: 2^12 bits (512 bytes, always in cache) checked
 * first, then 2^17 bits (16 KiB) once the live set is large. */
#define ALLOC_FILTER_BITS 17u
#define ALLOC_FILTER_SMALL_BITS 12u

extern _Atomic uint64_t alloc_live_filter[(1u << ALLOC_FILTER_BITS) / 64u];
extern _Atomic uint64_t alloc_live_filter_small[(1u << ALLOC_FILTER_SMALL_BITS) / 64u];

/* Top ALLOC_FILTER_BITS bits of a multiplicative hash; the small filter
 * uses the top ALLOC_FILTER_SMALL_BITS of the same. */
static inline uint32_t alloc_addr_hash(uintptr_t p)
{
	return (uint32_t)(((uint64_t)p * RT_HASH_MUL64) >> (64 - ALLOC_FILTER_BITS));
}

static inline bool alloc_filter_test(const _Atomic uint64_t *bits, uint32_t h)
{
	uint64_t w = atomic_load_explicit(&bits[h >> 6], memory_order_relaxed);
	return (w >> (h & 63u)) & 1u;
}

/* Home slot of an address in a live table of ALLOC_LIVE_SLOTS: the top bits
 * of the filter's hash (so entries sharing a filter bit share a home); a
 * smaller table takes its low bits. */
static inline uint32_t alloc_live_home(uintptr_t p)
{
	return (uint32_t)(((uint64_t)p * RT_HASH_MUL64) >> (64u - ALLOC_LIVE_HOME_BITS));
}

/* False when p is certainly not a live sampled allocation, by the filter
 * alone (the caller has seen ALLOC_FREE_RETIRE). */
static inline bool alloc_live_filter_maybe(const void *p)
{
	uint32_t h = alloc_addr_hash((uintptr_t)p);
	if (RT_LIKELY(!alloc_filter_test(alloc_live_filter_small,
					 h >> (ALLOC_FILTER_BITS - ALLOC_FILTER_SMALL_BITS))))
		return false;
	return alloc_filter_test(alloc_live_filter, h);
}

/* False when p is certainly not a live sampled allocation (the common case:
 * one load of a global flag, one of the filter). */
static inline bool alloc_live_maybe(const void *p)
{
	if (RT_LIKELY(!(atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed) &
			ALLOC_FREE_RETIRE)))
		return false;
	return alloc_live_filter_maybe(p);
}

/* A live entry as retire() hands it back (to restore it when realloc fails). */
struct alloc_live_entry {
	uintptr_t addr;
	uint64_t size;
	double weight;
	int tid;
	uint32_t depth;
	uint64_t *pcs; /* rt_malloc'd, owned by the entry */
};

/* Removes p from the live table.  With `saved`, hands the entry over (the
 * caller then restores or drops it); else frees it.  False if absent. */
bool alloc_live_retire(const void *p, struct alloc_live_entry *saved);
/* Puts back an entry taken by alloc_live_retire (realloc failed). */
void alloc_live_restore(struct alloc_live_entry *e);
/* Frees an entry taken by alloc_live_retire. */
void alloc_live_drop(struct alloc_live_entry *e);

/* True when the live table holds only entries of the parent (none inserted
 * since the fork; see collect_heap_only_inherited).  False when the live
 * heap is not tracked. */
bool alloc_live_inherited_only(void);

/* Counters, for logs and tests. */
struct alloc_stats {
	uint64_t samples;        /* sampled allocations */
	uint64_t live;           /* entries in the live table */
	uint64_t live_dropped;   /* sampled allocations not tracked: table full / no memory */
	uint64_t no_thread_slot; /* allocations not counted: per-thread table full */
	uint64_t record_failed;  /* recorder_add overflowed or failed */
};
void alloc_get_stats(struct alloc_stats *out);

/* The overhead cap's handles: the mean bytes between samples in effect
 * (new countdowns use it; a countdown in flight keeps the mean it was drawn
 * with, so weights stay unbiased), and the cost of sampled allocations
 * (timed on one sample in ALLOC_COST_EVERY; preempted ones left out). */
#define ALLOC_COST_EVERY 32u
void alloc_set_sample_bytes(uint64_t mean);
uint64_t alloc_sample_bytes(void);
void alloc_sample_cost(uint64_t *measured_ns, uint64_t *measured_samples);
uint64_t alloc_samples_taken(void);

#endif
