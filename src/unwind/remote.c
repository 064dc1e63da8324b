/* Remote unwinding strategies for blocked threads (see remote.h). */
#include "unwind/remote.h"

#include "rt/rt.h"
#include "rt/sys.h"

#define SCAN_WORDS 256
#define SCAN_TRIES 24
#define SCAN_PAGE 4096u /* at most two pages: SCAN_WORDS * 8 <= SCAN_PAGE */

uint32_t unwind_remote(const struct unwind_regs *regs, uint64_t *pcs, uint32_t max,
		       enum unwind_end *end)
{
	*end = UNWIND_END_OUTERMOST;
	return unwind_stack(regs, pcs, max, UNWIND_FLAG_REMOTE, end);
}

/* The scan over the n words read at sp: 0 if none leads anywhere (pcs[1]
 * as it was: a failed scan leaves a stack of one or two frames whole).  On
 * success pcs[0] is leaf_pc and *end is OUTERMOST, or TRUNCATED at max.
 * flags: UNWIND_FLAG_REMOTE for another thread's stack; [lo, hi) its bounds.
 * [signal-safe without UNWIND_FLAG_REMOTE] */
static uint32_t scan_words(uint64_t leaf_pc, uint64_t sp, uint64_t leaf_fp, const uint64_t *words, size_t n,
			   uint64_t lo, uint64_t hi, uint32_t flags, uint64_t *pcs, uint32_t max, enum unwind_end *end)
{
	const uint64_t second = pcs[1];
	uint32_t tries = 0;
	/* A thread stopped in our own code (a stop waiting for our threads)
	 * has live frames of ours above it: only below a leaf elsewhere are
	 * words into our code taken for stale ones. */
	uint32_t code_flags = 0;
	const bool skip_own = !(unwind_code_flags(leaf_pc, &code_flags) && (code_flags & UNWIND_CODE_OWN));
	/* From the word at sp itself: a leaf without a frame of its own (an
	 * assembly memcpy, a system call wrapper) has its return address there,
	 * and the frame pointer is still the caller's. */
	for (size_t i = 0; i < n && tries < SCAN_TRIES; i++) {
		/* Below a leaf outside our code, return addresses into our
		 * own code are passed over: our interposers sit between the
		 * program and its C library on every call, so the words a
		 * thread's earlier calls left below its live frames (in a C
		 * library frame's unwritten locals) hold them, and the chain
		 * from such a stale word is a real one of the past that
		 * rejoins the live one above the frames in between (a fork
		 * below the waitpid before it).  A live frame of ours there is
		 * left out of stacks anyway; the program's frame that called
		 * it is the next word tried. */
		if (words[i] < 0x1000 || !unwind_code_flags(words[i] - 1, &code_flags) ||
		    (skip_own && (code_flags & UNWIND_CODE_OWN)))
			continue;
		tries++;
		/* In frame-pointer code the caller's saved frame pointer sits
		 * just below the return address; where a frame record need not
		 * sit at the caller's sp, the sp above it is only a bound. */
		struct unwind_regs regs = { .pc = words[i] - 1, .sp = sp + 8 * (i + 1), .fp = i > 0 ? words[i - 1] : leaf_fp,
					    .stack_lo = lo, .stack_hi = hi };
		enum unwind_end got = UNWIND_END_BROKEN;
		uint32_t depth = unwind_stack(&regs, pcs + 1, max - 1,
					      flags | (ARCH_FRAME_RECORD_AT_CFA ? 0u : UNWIND_FLAG_SP_BOUND), &got);
		/* Accepted when the tables lead to the first frame, or at least
		 * two callers up (musl's own outermost frames have no tables). */
		if ((depth >= 2 && got != UNWIND_END_BROKEN) || depth >= 3) {
			pcs[0] = leaf_pc;
			*end = got == UNWIND_END_TRUNCATED ? UNWIND_END_TRUNCATED : UNWIND_END_OUTERMOST;
			return depth + 1;
		}
	}
	pcs[1] = second;
	return 0;
}

/* The scan of another thread's stack (words read through the kernel). */
static uint32_t unwind_by_scan(uint64_t leaf_pc, uint64_t sp, uint64_t *pcs, uint32_t max,
			       unwind_stack_bounds_fn bounds, enum unwind_end *end)
{
	uint64_t lo, hi;
	if (max < 2)
		return 0;
	if (!unwind_stack_bounds(sp, &lo, &hi) && !(bounds && bounds(sp, &lo, &hi)))
		return 0;
	if (hi <= sp || (sp & 7) != 0)
		return 0;
	uint64_t words[SCAN_WORDS] = { 0 };
	size_t n = (size_t)RT_MIN((hi - sp) / 8, (uint64_t)SCAN_WORDS);
	if (n < 2)
		return 0;
	/* Page by page, so the words below an unreadable page still count: the
	 * snapshot's bounds can outlast a neighbour they were merged with, and
	 * a thread's frames sit close to the top of its stack. */
	struct iovec local[2], remote[2];
	uint64_t split = RT_MIN(sp + n * 8, (sp | (SCAN_PAGE - 1)) + 1);
	local[0].iov_base = words;
	local[0].iov_len = (size_t)(split - sp);
	remote[0].iov_base = (void *)(uintptr_t)sp;
	remote[0].iov_len = local[0].iov_len;
	local[1].iov_base = (uint8_t *)words + local[0].iov_len;
	local[1].iov_len = n * 8 - local[0].iov_len;
	remote[1].iov_base = (void *)(uintptr_t)split;
	remote[1].iov_len = local[1].iov_len;
	long got = sys_read_memory_ranges((int)sys_getpid(), local, remote, local[1].iov_len > 0 ? 2 : 1);
	if (got < 16)
		return 0;
	n = RT_MIN(n, (size_t)got / 8);
	return scan_words(leaf_pc, sp, 0, words, n, lo, hi, UNWIND_FLAG_REMOTE, pcs, max, end);
}

uint32_t unwind_scan_here(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t stack_lo, uint64_t stack_hi,
			  uint64_t *pcs, uint32_t max, enum unwind_end *end)
{
	uint64_t lo = stack_lo, hi = stack_hi;
	if (max < 2 || (sp & 7) != 0)
		return 0;
	if (!(hi > sp && sp >= lo) && !unwind_stack_bounds(sp, &lo, &hi))
		return 0;
	if (hi <= sp)
		return 0;
	size_t n = (size_t)RT_MIN((hi - sp) / 8, (uint64_t)SCAN_WORDS);
	if (n < 2)
		return 0;
	return scan_words(pc, sp, fp, (const uint64_t *)(uintptr_t)sp, n, lo, hi, 0, pcs, max, end);
}

uint32_t unwind_remote_syscall(uint64_t pc, uint64_t sp, uint64_t *pcs, uint32_t max,
			       unwind_stack_bounds_fn bounds, enum unwind_end *end)
{
	struct unwind_regs regs = { .pc = pc, .sp = sp, .fp = 0 };
	*end = UNWIND_END_OUTERMOST;
	uint32_t depth = unwind_stack(&regs, pcs, max, UNWIND_FLAG_REMOTE, end);
	if (unwind_ran_out_at_once(depth, *end)) {
		uint32_t scanned = unwind_by_scan(pc, sp, pcs, max, bounds, end);
		if (scanned > 0)
			return scanned;
	}
	return depth;
}
