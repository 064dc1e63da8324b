/* Shared sampling helpers: stack capture for hooks, Poisson weights, and a
 * lock-free random source. */
#include "collect/sample.h"
#include "profile/profile.h"
#include "rt/arch.h"
#include "rt/sys.h"
#include "unwind/remote.h"
#include "unwind/unwind.h"

static atomic_ullong random_counter;


static uint64_t splitmix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t sample_random_u64(void)
{
	return splitmix(atomic_fetch_add_explicit(&random_counter, RT_HASH_MUL64,
						  memory_order_relaxed));
}

void sample_random_seed(void)
{
	if (atomic_load(&random_counter) != 0)
		return;
	uint64_t seed = 0;
	if (!rt_random_bytes(&seed, sizeof(seed)))
		seed = rt_monotonic_ns() ^ ((uint64_t)sys_getpid() << 32);
	uint64_t zero = 0;
	(void)atomic_compare_exchange_strong(&random_counter, &zero, seed | 1u);
}

/* Our frames between here and the hook are at most this far up the stack. */
#define OWN_FRAMES_SPAN (64u * 1024u)

/* The registers of the hook's caller as the hook returns, found by following
 * the frame-pointer chain of our own frames (the library keeps frame
 * pointers) to the frame whose return address is ra: the unwind can start
 * there instead of unwinding our frames through CFI.  False when the chain
 * does not lead there (then the caller unwinds everything). */
static bool hook_caller_regs(uintptr_t ra, uint64_t sp, uint64_t fp, uint64_t stack_hi,
			     struct unwind_regs *regs)
{
	uint64_t hi = sp + OWN_FRAMES_SPAN;
	if (stack_hi > sp && stack_hi < hi)
		hi = stack_hi;
	for (uint32_t i = 0; i < SAMPLE_OWN_FRAMES; i++) {
		if (fp < sp || fp > hi - 16u || (fp & 7u) != 0)
			return false;
		const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
		if (frame[1] == (uint64_t)ra) {
			regs->pc = ra;
			regs->sp = fp + 16u;
			regs->fp = frame[0];
			return true;
		}
		sp = fp + 16u;
		fp = frame[0];
	}
	return false;
}

__attribute__((noinline)) uint32_t sample_capture_caller(uintptr_t ra, uint64_t stack_lo, uint64_t stack_hi,
							 uint64_t *buf, uint32_t cap, uint32_t *depth)
{
	struct unwind_regs regs;
	rt_memset(&regs, 0, sizeof(regs));
	uint64_t pc, sp, fp;
	ARCH_HERE(pc, sp, fp);
	regs.stack_lo = stack_lo;
	regs.stack_hi = stack_hi;
	enum unwind_end end = UNWIND_END_OUTERMOST;
	/* The trick needs frame records that sit right below the caller's sp. */
	if (ARCH_FRAME_RECORD_AT_CFA && ra != 0 && cap > SAMPLE_OWN_FRAMES &&
	    hook_caller_regs(ra, sp, fp, stack_hi, &regs)) {
		uint32_t n = unwind_stack_memo(&regs, buf, cap - SAMPLE_OWN_FRAMES, UNWIND_FLAG_CALLER, &end);
		*depth = n;
		if (end == UNWIND_END_TRUNCATED && n > 1)
			buf[n - 1] = SW_PC_TRUNCATED;
		return 0;
	}
	regs.pc = pc;
	regs.sp = sp;
	regs.fp = fp;
	uint32_t n = unwind_stack_memo(&regs, buf, cap, 0, &end);
	uint32_t search = RT_MIN(n, SAMPLE_OWN_FRAMES);
	for (uint32_t i = 0; i < search; i++) {
		if (buf[i] == (uint64_t)ra - 1 || buf[i] == (uint64_t)ra) {
			*depth = n - i;
			if (end == UNWIND_END_TRUNCATED && *depth > 1)
				buf[n - 1] = SW_PC_TRUNCATED;
			return i;
		}
	}
	buf[0] = ra ? (uint64_t)ra - 1 : SW_PC_UNKNOWN;
	*depth = 1;
	return 0;
}

__attribute__((noinline)) uint32_t sample_caller_stack(uintptr_t ra, uint64_t stack_lo, uint64_t stack_hi,
							uint64_t *pcs, uint32_t cap)
{
	uint32_t depth = 0;
	uint32_t at = sample_capture_caller(ra, stack_lo, stack_hi, pcs, cap, &depth);
	if (depth == 0 || at >= cap || depth > cap - at)
		return 0;
	rt_memmove(pcs, pcs + at, depth * sizeof(pcs[0]));
	return depth;
}

uint32_t sample_unsampled_stack(uint64_t entry_pc, uintptr_t ra, uint64_t stack_lo, uint64_t stack_hi,
				uint64_t *pcs, uint32_t max_frames)
{
	pcs[0] = SW_PC_UNSAMPLED;
	if (!entry_pc)
		return 1;
	pcs[1] = entry_pc;
	return 2 + sample_caller_stack(ra, stack_lo, stack_hi, pcs + 2, max_frames);
}

double sample_weight(uint64_t amount, uint64_t mean)
{
	if (amount == 0 || mean == 0)
		return amount == 0 ? 0.0 : 1.0;
	double x = (double)amount / (double)mean;
	double p; /* probability of being sampled: 1 - exp(-x) */
	if (x < 1e-4)
		p = x * (1.0 - x * (0.5 - x / 6.0)); /* series, no cancellation */
	else if (x > 40.0)
		return 1.0;
	else
		p = 1.0 - rt_exp(-x);
	return 1.0 / p;
}

int64_t sample_round_random(struct rt_rng *rng, double x)
{
	if (!(x > 0.0))
		return 0;
	const double cap = 4e18;
	if (!(x < cap))
		return (int64_t)cap;
	int64_t r = (int64_t)x;
	double frac = x - (double)r;
	if (frac > 0.0 && rt_rng_uniform(rng) <= frac)
		r++;
	return r;
}


uint32_t sample_unwind_interrupted(const void *ucontext, uint64_t stack_lo, uint64_t stack_hi,
				   uint64_t *pcs, uint32_t max)
{
	struct unwind_regs regs;
	unwind_regs_from_ucontext(ucontext, &regs);
	regs.stack_lo = stack_lo;
	regs.stack_hi = stack_hi;
	enum unwind_end end = UNWIND_END_OUTERMOST;
	uint32_t depth = unwind_stack(&regs, pcs, max, 0, &end);
	/* The tables ran out at once, as in a C library built without them
	 * (musl's); where calls push the return address, one above sp leads on
	 * (where a link register holds it, the unwinder has already used it). */
	if (!ARCH_CFI_LINK_REGISTER && depth >= 1 && unwind_ran_out_at_once(depth, end)) {
		uint32_t scanned = unwind_scan_here(regs.pc, regs.sp, regs.fp, stack_lo, stack_hi, pcs, max, &end);
		if (scanned > 0)
			depth = scanned;
	}
	return sample_mark_ends(pcs, depth, end);
}

uint32_t sample_mark_ends(uint64_t *pcs, uint32_t depth, enum unwind_end end)
{
	if (depth == 0)
		pcs[depth++] = SW_PC_UNKNOWN;
	if (end == UNWIND_END_TRUNCATED)
		pcs[depth++] = SW_PC_TRUNCATED;
	return depth;
}

/* Our own code: from the library's ELF header to the end of its text (both
 * symbols are provided by the linker). */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
extern const char __etext[] __attribute__((visibility("hidden")));

static bool own_pc(uint64_t pc)
{
	return pc >= (uint64_t)(uintptr_t)__ehdr_start && pc < (uint64_t)(uintptr_t)__etext;
}

static uint32_t drop_leaves(uint64_t *pcs, uint32_t depth, uint32_t skip)
{
	if (skip == 0)
		return depth;
	for (uint32_t i = skip; i < depth; i++)
		pcs[i - skip] = pcs[i];
	return depth - skip;
}

uint32_t sample_drop_own_leaves(uint64_t *pcs, uint32_t depth)
{
	uint32_t skip = 0;
	while (skip + 1 < depth && own_pc(pcs[skip]))
		skip++;
	return drop_leaves(pcs, depth, skip);
}

uint32_t sample_drop_through_own(uint64_t *pcs, uint32_t depth)
{
	uint32_t first = 0;
	while (first < depth && first < SAMPLE_OWN_FRAMES && !own_pc(pcs[first]))
		first++;
	if (first >= depth || first >= SAMPLE_OWN_FRAMES)
		return depth;
	uint32_t skip = first;
	while (skip + 1 < depth && own_pc(pcs[skip]))
		skip++;
	return drop_leaves(pcs, depth, skip);
}
