/* Async-signal-safe stack unwinder.
 *
 * unwind_stack() walks a thread's stack from a register set (a signal
 * handler's ucontext, or a blocked thread's published pc/sp/fp) and writes
 * program counters, leaf first.  It reads only:
 *  - our own published snapshot (executable ranges with their modules' CFI
 *    indexes, readable-writable ranges used as stack bounds), and
 *  - each module's .eh_frame and search table through the registry's own
 *    read-only mapping of its file (cfi.h cfi_index), and the row cache, a
 *    fixed table of rules already looked up (no allocation), and the last
 *    unwind's rows, fixed too, and
 *  - the stack, every word checked against the bounds of that stack, and
 *  - code bytes (signal trampoline detection) only inside file-backed or vDSO
 *    executable ranges of the snapshot.
 * No malloc, no locks, no recursion, no libc.
 *
 * Per frame: if a CFI row covers the pc it gives the caller's CFA, return
 * address and saved frame pointer; otherwise the frame-pointer chain (rbp,
 * x29) is followed (each frame pointer inside the
 * stack, 8-aligned, strictly increasing).  Signal frames (the rt_sigreturn
 * trampoline, glibc's and musl's __restore_rt) are crossed by reading the
 * saved ucontext.  On aarch64 the return address of a frame that has not
 * saved it yet is the interrupted link register (x30), and return addresses
 * are stripped of pointer-authentication bits.
 *
 * The snapshot is built off the signal path by the symbols registry
 * (symbols.h), published with one atomic pointer, and retired snapshots are
 * freed only once no unwinder can still be reading them (an in-use counter
 * checked after the swap).
 */
#ifndef STOWAWAY_UNWIND_UNWIND_H
#define STOWAWAY_UNWIND_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "unwind/cfi.h"

struct unwind_regs {
	uint64_t pc; /* rip / pc: exact, not a return address */
	uint64_t sp; /* rsp / sp */
	uint64_t fp; /* rbp / x29 */
	uint64_t lr; /* x30 where the architecture has a link register; 0: unknown */
	/* Optional bounds of the stack sp is on, [stack_lo, stack_hi); both 0 to
	 * let the unwinder find them in the snapshot by sp. */
	uint64_t stack_lo, stack_hi;
};

/* The stack belongs to another thread (wall sampler): every stack read goes
 * through process_vm_readv, so a stack unmapped meanwhile yields a short
 * stack instead of a fault.  The caller validates the result afterwards. */
#define UNWIND_FLAG_REMOTE 1u
/* Ignore CFI tables and follow frame pointers only (tests, measurements). */
#define UNWIND_FLAG_FP_ONLY 2u
/* regs->pc is a return address (the registers are a caller's as its callee
 * returns): looked up and recorded minus 1, like every later frame. */
#define UNWIND_FLAG_CALLER 4u
/* regs->sp is only a lower bound of the first frame's stack pointer (a
 * frame record found on the stack where records need not sit at the
 * caller's sp, rt/arch.h ARCH_FRAME_RECORD_AT_CFA): rules based on sp are
 * not used for that frame. */
#define UNWIND_FLAG_SP_BOUND 8u

enum unwind_end {
	UNWIND_END_OUTERMOST = 0, /* reached the thread's first frame (RA undefined, fp 0, ra 0) */
	UNWIND_END_TRUNCATED = 1, /* max frames written and more were there */
	UNWIND_END_BROKEN = 2,    /* no way to find the next frame (bad pointer, no info) */
};

/* Whether a stack of `depth` frames that ended with `end` ran out at once
 * (one or two frames, not cut at a maximum): the sign of code without
 * tables, worth a scan for the caller.  OUTERMOST is no proof of the
 * contrary there: a frame-pointer step ends at a zero register as readily
 * as BROKEN at a bad one, and code built without frame pointers (musl's)
 * leaves zero in it as often as not; a remote unwind knows no frame pointer
 * at all.  [signal-safe] */
static inline bool unwind_ran_out_at_once(uint32_t depth, enum unwind_end end)
{
	return depth <= 2 && end != UNWIND_END_TRUNCATED;
}

/* The registers a signal interrupted, from the handler's ucontext.
 * [signal-safe] */
void unwind_regs_from_ucontext(const void *ucontext, struct unwind_regs *out);

/* True if the instruction just before pc is a system call instruction (an
 * interrupted pc there is where a signal raised during the call was
 * delivered), read through the snapshot's readable code ranges only.
 * [signal-safe] */
bool unwind_after_syscall(uint64_t pc);

/* Writes up to `max` pcs, leaf first; returns how many.  pcs[0] is regs->pc
 * (minus 1 with UNWIND_FLAG_CALLER).
 * Every later pc is a return address minus 1 (it points into the call
 * instruction, so symbolization and line lookup name the caller), except the
 * frames entered by a signal: the trampoline's own address and the pc the
 * signal interrupted are exact.  *end (may be NULL) tells why it stopped; the
 * caller appends its "[truncated]" frame for UNWIND_END_TRUNCATED.
 * [signal-safe] */
uint32_t unwind_stack(const struct unwind_regs *regs, uint64_t *pcs, uint32_t max,
		      uint32_t flags, enum unwind_end *end);

/* unwind_stack, answered from a memo of recent unwinds when one started at
 * the same place (pc, distance from sp to regs->stack_hi, lr, flags, max;
 * the frame pointer when that walk used it) on the same snapshot and every
 * stack word it depended on still holds the same value: the same pcs and
 * end as unwinding again.  Needs the stack's bounds in regs (else, and for
 * remote or frame-pointer-only unwinds, it is unwind_stack).  One caller
 * at a time uses the memo; another (a thread, or a handler interrupting
 * the holder) unwinds without it.  [signal-safe] */
uint32_t unwind_stack_memo(const struct unwind_regs *regs, uint64_t *pcs, uint32_t max,
			   uint32_t flags, enum unwind_end *end);

/* ---- the snapshot (built by symbols.c, off the signal path) ---- */

/* Code bytes of this range may be read (file-backed mapping or the vDSO). */
#define UNWIND_CODE_READABLE 1u
#define UNWIND_CODE_OWN 2u /* this library's own code */
struct unwind_code_range {
	uint64_t start, end; /* runtime addresses of an executable mapping */
	uint64_t bias;       /* runtime = link-time + bias */
	struct cfi_index *cfi; /* may be NULL; owned by the caller */
	/* What is mapped here (file and load address), the same in every
	 * process that maps it alike: the row cache keeps rules under it, so
	 * they outlive snapshots and serve processes forked from this one.
	 * 0: rules found here are not cached. */
	uint64_t id;
	uint32_t flags;
};

/* The main thread's stack: grows down below `start` on demand. */
#define UNWIND_DATA_GROWSDOWN 1u
struct unwind_data_range {
	uint64_t start, end; /* a readable-writable private mapping */
	uint32_t flags;
};

/* Copies both arrays (sorted by start, non-overlapping) into a new snapshot
 * and publishes it.  The CFI indexes, and the bytes they read in place
 * (their owner's own read-only mapping), must stay alive until unwind_reclaim()
 * returns true after they stopped being referenced.  False if out of memory
 * (the previous snapshot stays).  Not signal-safe; callers serialize. */
bool unwind_publish(const struct unwind_code_range *code, uint32_t ncode,
		    const struct unwind_data_range *data, uint32_t ndata);

/* Frees retired snapshots if no unwinder is running; true when none is left
 * (then only the current snapshot can reference CFI tables).  Not signal-safe. */
bool unwind_reclaim(void);

/* Bounds [lo, hi) of the readable-writable range containing sp according to
 * the current snapshot (for the lead's per-thread registration).  False
 * counts as code met outside the snapshot (unwind_take_unknown_code): the
 * stack was mapped since.  [signal-safe] */
bool unwind_stack_bounds(uint64_t sp, uint64_t *lo, uint64_t *hi);

/* True if pc lies in an executable mapping of the current snapshot, whose
 * UNWIND_CODE_* flags go to *flags (0 when it does not).  A probe (a stack
 * scan tries every word): false does not count as code met outside the
 * snapshot (unwind_take_unknown_code).  [signal-safe] */
bool unwind_code_flags(uint64_t pc, uint32_t *flags);

/* In a fork child: the last unwind's rows are free again (their holder may
 * have been another thread, which the child does not have). */
void unwind_after_fork_child(void);

/* The runtime start of the function covering pc by its module's unwind
 * tables (the FDE's first address); false if no FDE covers it or pc is in
 * no published code range.  [signal-safe] */
bool unwind_function_start(uint64_t pc, uint64_t *start);

/* Around a dlclose (or anything that unmaps code): while paused, the
 * unwinder reads no code bytes, so a range about to disappear is never read.
 * Resume after the refresh that follows.  Nestable.  [signal-safe] */
void unwind_code_reads_pause(void);
void unwind_code_reads_resume(void);

/* True once since the last call if an unwind met a pc (the interrupted one,
 * or a return address) outside every published code range, or a stack
 * lookup found none: mapped since the last snapshot, so the module registry
 * should be refreshed.
 * Clears the flag.  [signal-safe] */
bool unwind_take_unknown_code(void);

/* Counts since start, for the profile's comment: unwinds that met a pc in
 * no published code range (code mapped since the last refresh: the stack
 * ends there, shorter, instead of being dropped), frames whose rule was
 * looked up in a module's .eh_frame rather than found in the row cache, and
 * frames whose rule came from the last unwind's frames (the same pc at the
 * same stack pointer), with no row-cache probe.  [signal-safe] */
struct unwind_counts {
	uint64_t unknown_code;
	uint64_t rule_lookups;
	uint64_t rows_from_last_stack;
	uint64_t stacks_from_memo; /* unwind_stack_memo calls answered from the memo */
};
void unwind_counts_get(struct unwind_counts *out);

#endif
