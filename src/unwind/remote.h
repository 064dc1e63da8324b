/* Unwinding a blocked thread of this process from another thread (the wall
 * sampler), two strategies.  Every stack word is read through the kernel
 * (UNWIND_FLAG_REMOTE), so a stack that goes away meanwhile yields a short
 * stack, never a fault; the caller checks afterwards that the thread did
 * not move.  Not for signal handlers (the scan reads 2 KiB of stack through
 * the kernel), except unwind_scan_here, which reads its own stack. */
#ifndef STOWAWAY_UNWIND_REMOTE_H
#define STOWAWAY_UNWIND_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwind.h"

/* From registers the thread published itself (an interposed wait's
 * pc/sp/fp): unwind_stack with UNWIND_FLAG_REMOTE. */
uint32_t unwind_remote(const struct unwind_regs *regs, uint64_t *pcs, uint32_t max,
		       enum unwind_end *end);

/* Bounds [lo, hi) of the stack containing sp, for stacks the snapshot does
 * not know yet (e.g. read fresh from /proc/self/maps). */
typedef bool (*unwind_stack_bounds_fn)(uint64_t sp, uint64_t *lo, uint64_t *hi);

/* From the pc and sp the kernel reports for a thread inside a system call
 * (no frame pointer there).  Unwinds with the tables; when they run out at
 * once (one or two frames, as in a C library built without unwind tables,
 * musl's), scans up to 256 words from sp for the lowest return address
 * from which the tables lead to the thread's first frame (or at least two
 * callers up) and unwinds from there: pcs[0] stays pc and the frames in
 * between, inside the C library, are skipped.  Unless pc is in this
 * library's own code, words into that code (UNWIND_CODE_OWN) are not
 * tried: below a thread's live frames they are stale ones of its earlier
 * calls through our interposers.  At most 24 candidates are
 * tried.  `bounds` is asked only when the snapshot does not know the stack.
 * Returns the depth; *end as unwind_stack's (a scan that succeeded ends
 * OUTERMOST, or TRUNCATED at max). */
uint32_t unwind_remote_syscall(uint64_t pc, uint64_t sp, uint64_t *pcs, uint32_t max,
			       unwind_stack_bounds_fn bounds, enum unwind_end *end);

/* The same scan on the calling thread's own stack, interrupted at pc/sp/fp (a
 * signal handler whose unwind stopped at once in code without tables): the
 * words are read in place within [stack_lo, stack_hi) (both 0: the
 * snapshot's bounds of sp).  Returns the depth and sets *end, or 0 if no
 * word led anywhere (pcs[0] and pcs[1] then as they were).  [signal-safe] */
uint32_t unwind_scan_here(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t stack_lo, uint64_t stack_hi,
			  uint64_t *pcs, uint32_t max, enum unwind_end *end);

#endif
