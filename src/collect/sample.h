/* What the sampling collectors share: the stack a signal interrupted (CPU
 * and wall handlers), the stack of the code that called a hook (allocations,
 * locks, exceptions), Poisson-sampling weights, and a lock-free random
 * source.  Only functions marked [signal-safe] run in signal handlers. */
#ifndef STOWAWAY_COLLECT_SAMPLE_H
#define STOWAWAY_COLLECT_SAMPLE_H

#include "rt/rt.h"
#include "unwind/unwind.h"

/* The markers of an unwound stack of `depth` frames in pcs (room for one
 * more): "[unknown]" when nothing unwound, "[truncated]" after an unwind
 * that `end` says max cut.  Returns the new depth.  [signal-safe] */
uint32_t sample_mark_ends(uint64_t *pcs, uint32_t depth, enum unwind_end end);
/* Removes the leading frames that are in our own library's code (a signal
 * delivered while one of our hooks ran), keeping at least one frame.
 * Returns the new depth.  [signal-safe] */
uint32_t sample_drop_own_leaves(uint64_t *pcs, uint32_t depth);
/* For a stack interrupted inside one of our interposers: drops every frame
 * up to and including the first run of frames in our library (the
 * interposed function's callees, our hook code and the interposer itself),
 * so the stack starts at the interposer's caller.  Unchanged when no frame
 * of ours is among the first SAMPLE_OWN_FRAMES. [signal-safe] */
uint32_t sample_drop_through_own(uint64_t *pcs, uint32_t depth);

/* The stack the signal with this ucontext interrupted, leaf first, into pcs
 * (room for max + 1), with its markers (sample_mark_ends).
 * stack_lo/stack_hi as for sample_capture_caller.  Returns the depth.
 * [signal-safe] */
uint32_t sample_unwind_interrupted(const void *ucontext, uint64_t stack_lo, uint64_t stack_hi,
				   uint64_t *pcs, uint32_t max);

/* Frames of ours (hook, collector, capture) above the hook's caller. */
#define SAMPLE_OWN_FRAMES 8u

/* The stack of the hook's caller, from the call site (ra - 1, `ra` being
 * the hook's return address) outwards.  On x86_64 the unwind starts in the
 * caller when our frames' frame-pointer chain leads to ra; otherwise it
 * starts here and skips our frames up to ra.  stack_lo/stack_hi bound the
 * thread's stack (0, 0: the unwinder finds them).  Returns the index of the
 * call site in buf and the depth in *depth (at most cap - SAMPLE_OWN_FRAMES
 * when the unwind starts in the caller); with no such frame, buf[0] is the
 * call site alone.  A truncated stack ends in SW_PC_TRUNCATED. */
uint32_t sample_capture_caller(uintptr_t ra, uint64_t stack_lo, uint64_t stack_hi, uint64_t *buf,
			       uint32_t cap, uint32_t *depth);

/* The stack of the hook's caller (sample_capture_caller) moved to start at
 * pcs[0]: its depth, 0 when none fits in cap. */
uint32_t sample_caller_stack(uintptr_t ra, uint64_t stack_lo, uint64_t stack_hi, uint64_t *pcs,
			     uint32_t cap);

/* The stack of time taken as a thread ends without knowing where it went:
 * "[unsampled]" under the thread's routine entry_pc and the frames that
 * called it (from ra), or "[unsampled]" alone without entry_pc.  pcs has
 * room for max_frames + 2; returns the depth written. */
uint32_t sample_unsampled_stack(uint64_t entry_pc, uintptr_t ra, uint64_t stack_lo, uint64_t stack_hi,
				uint64_t *pcs, uint32_t max_frames);

/* 1/(1-exp(-amount/mean)): the inverse of the probability that an event of
 * `amount` (bytes, nanoseconds) is picked by exponential sampling with that
 * mean; 0 when amount is 0. */
double sample_weight(uint64_t amount, uint64_t mean);
/* x rounded up or down at random, with expectation x (x >= 0). */
int64_t sample_round_random(struct rt_rng *rng, double x);

/* A uniform 64-bit random number, lock-free and signal-safe: a global
 * counter mixed by splitmix64. */
uint64_t sample_random_u64(void);
/* Seeds that counter from getrandom once (idempotent; collectors' start). */
void sample_random_seed(void);

#endif
