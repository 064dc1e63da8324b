/* The signal-safe unwinder and its published snapshot (see unwind.h). */
#include "unwind/unwind.h"

#include "rt/rt.h"
#include "rt/search.h"
#include "rt/sys.h"

/* After rt/sys.h: the kernel ucontext needs its signal types. */
#include <asm/sigcontext.h>
#include <asm/ucontext.h>

/* The architecture's ucontext offsets agree with the kernel's headers. */
ARCH_UCONTEXT_CHECKS

struct snapshot {
	uint64_t generation; /* distinct for every published snapshot */
	uint32_t ncode, ndata;
	const struct unwind_code_range *code;
	const struct unwind_data_range *data;
};

static _Atomic(struct snapshot *) current_snapshot;
/* Unwinders currently running (handlers on any thread, the wall sampler). */
static atomic_uint active_unwinders;
static atomic_int code_reads_paused;
/* Set when an unwind met a pc outside every code range (unwind_take_unknown_code). */
static atomic_bool unknown_code_seen;
static _Atomic uint64_t unknown_code_unwinds;

/* Sets unknown_code_seen; the load first keeps the line shared while it is set. */
static void ask_refresh(void)
{
	if (!atomic_load_explicit(&unknown_code_seen, memory_order_relaxed))
		atomic_store_explicit(&unknown_code_seen, true, memory_order_relaxed);
}
static _Atomic uint64_t rule_lookups;
static _Atomic uint64_t rows_from_last_stack;

/* Retired snapshots waiting for active_unwinders to be seen at 0.  Guarded by
 * the caller's serialization of publish/reclaim. */
#define RETIRED_MAX 64
static struct snapshot *retired[RETIRED_MAX];
static uint32_t nretired;

/* A main-thread stack may have grown this far below its last-seen start. */
#define GROWSDOWN_SLACK (64ull << 20)
/* Bound for stacks we know nothing about (read safely through the kernel). */
#define UNKNOWN_STACK_SPAN (1ull << 20)
/* At most this many signal frames are crossed in one stack. */
#define MAX_SIGNAL_FRAMES 8

/* ---- the row cache [signal-safe] ----
 *
 * Rules looked up in place cost a binary search and two small programs; the
 * same return addresses come back sample after sample, so their rows are
 * kept in a fixed direct-mapped table (no allocation, bounded memory).  An
 * entry is valid for the code it was filled from: the span of addresses
 * its row holds for and the identity of the module mapped there
 * (unwind_code_range.id), so rows outlive snapshots that leave their
 * module in place.  The table is shared memory,
 * made before the first snapshot: processes forked after that share it
 * (a prefork server's workers run the same code, mapped at the same
 * addresses), and a rule one of them looked up serves the others.  Each
 * entry is guarded by a sequence number kept in one word with the
 * identity: a writer claims the entry by moving the number to odd (a
 * handler interrupting a writer, or another process's writer, finds it odd
 * and skips), readers retry nothing and treat any change as a miss.  A
 * writer killed between claim and release leaves its entry unused.
 *
 * An entry is 32 bytes, so a probe reads one cache line, and a page is read
 * only once one of its entries was written: reading a page never written
 * would allocate it, and the first write would then fault again. */
#define ROW_CACHE_SIZE 4096u
#define ROW_CACHE_SEQ_BITS 24
#define ROW_CACHE_SEQ_MASK ((1ull << ROW_CACHE_SEQ_BITS) - 1)
struct row_cache_entry {
	/* identity << ROW_CACHE_SEQ_BITS | sequence number (odd: being written) */
	atomic_uint_fast64_t state;
	atomic_uint_fast64_t lo; /* the span starts here */
	/* struct cfi_row, kind CFI_NONE: no rule; its pc field holds the span's
	 * length (the row read back has pc 0, as a lookup's) */
	atomic_uint_fast64_t row[2];
};
_Static_assert(sizeof(struct cfi_row) == 2 * sizeof(uint64_t), "a row is two words");
_Static_assert(sizeof(struct row_cache_entry) == 32, "an entry is half a cache line");
#define ROW_CACHE_PER_PAGE (4096u / sizeof(struct row_cache_entry))
#define ROW_CACHE_PAGES (ROW_CACHE_SIZE / ROW_CACHE_PER_PAGE)
_Static_assert(ROW_CACHE_PAGES <= 64, "one bit per page of the table");
struct row_cache {
	struct row_cache_entry entries[ROW_CACHE_SIZE]; /* page-aligned: the mapping's start */
	_Atomic uint64_t pages; /* bit p: page p of entries has been written */
};
/* NULL until the first snapshot (then no row is cached), or if no memory. */
static struct row_cache *_Atomic row_table;

/* Maps the table once, shared with the processes forked from here on;
 * private if shared memory is refused.  Not signal-safe. */
static void row_cache_create(void)
{
	if (atomic_load(&row_table) != NULL)
		return;
	void *p = rt_shared_pages_alloc(sizeof(struct row_cache));
	if (p == NULL)
		p = rt_pages_alloc(sizeof(struct row_cache));
	if (p == NULL)
		return;
	atomic_store(&row_table, (struct row_cache *)p);
}

/* Each entry keeps the span of addresses its row holds for.  The pc an
 * interrupted frame stopped at is a new address nearly every sample: its
 * entry is placed by the 64 bytes of code it lies in (1 <<
 * ROW_CACHE_GRANULE_SHIFT), so a sample landing anywhere in a function's
 * body finds the body's row.  A return address comes back exactly, and
 * several call sites of one block of code can need different rows: its
 * entry is placed by the address itself. */
#define ROW_CACHE_GRANULE_SHIFT 6
static uint32_t row_cache_index(uint64_t pc, bool exact)
{
	uint64_t key = exact ? pc >> ROW_CACHE_GRANULE_SHIFT : pc;
	uint64_t h = key * RT_HASH_MUL64;
	return (uint32_t)(h >> 52) & (ROW_CACHE_SIZE - 1);
}

/* A code identity as kept in an entry's state word: never 0, the state of
 * an entry never written. */
static uint64_t row_cache_tag(uint64_t id)
{
	return (id | 1u) << ROW_CACHE_SEQ_BITS;
}

/* 1 hit with a rule, 0 hit without, -1 miss. */
static int row_cache_get(uint64_t pc, bool exact, uint64_t id, struct cfi_row *out)
{
	struct row_cache *t = atomic_load_explicit(&row_table, memory_order_relaxed);
	uint32_t i = row_cache_index(pc, exact);
	uint64_t page = 1ull << (i / ROW_CACHE_PER_PAGE);
	if (t == NULL || !(atomic_load_explicit(&t->pages, memory_order_relaxed) & page))
		return -1;
	struct row_cache_entry *e = &t->entries[i];
	uint64_t state = atomic_load_explicit(&e->state, memory_order_acquire);
	if ((state & 1) != 0 || (state & ~ROW_CACHE_SEQ_MASK) != row_cache_tag(id))
		return -1;
	uint64_t lo = atomic_load_explicit(&e->lo, memory_order_relaxed);
	uint64_t w[2] = {atomic_load_explicit(&e->row[0], memory_order_relaxed),
			 atomic_load_explicit(&e->row[1], memory_order_relaxed)};
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->state, memory_order_relaxed) != state)
		return -1;
	struct cfi_row row;
	__builtin_memcpy(&row, w, sizeof(row));
	if (pc < lo || pc - lo >= row.pc)
		return -1;
	row.pc = 0;
	*out = row;
	return out->kind == CFI_NONE ? 0 : 1;
}

/* Keeps row as the rule for [lo, hi), which holds pc, where a lookup of pc
 * (exact: an interrupted frame's) looks. */
static void row_cache_put(uint64_t pc, bool exact, uint64_t lo, uint64_t hi, uint64_t id,
			  const struct cfi_row *row)
{
	struct row_cache *t = atomic_load_explicit(&row_table, memory_order_relaxed);
	if (t == NULL)
		return;
	uint32_t i = row_cache_index(pc, exact);
	struct row_cache_entry *e = &t->entries[i];
	uint64_t page = 1ull << (i / ROW_CACHE_PER_PAGE);
	bool written = (atomic_load_explicit(&t->pages, memory_order_relaxed) & page) != 0;
	/* A page never written holds zeros: claimed by the write alone. */
	uint_fast64_t state = written ? atomic_load_explicit(&e->state, memory_order_relaxed) : 0;
	if ((state & 1) != 0 ||
	    !atomic_compare_exchange_strong_explicit(&e->state, &state, state + 1, memory_order_acquire,
						     memory_order_relaxed))
		return;
	atomic_thread_fence(memory_order_release);
	struct cfi_row kept = *row;
	kept.pc = (uint32_t)RT_MIN(hi - lo, (uint64_t)UINT32_MAX);
	uint64_t w[2];
	__builtin_memcpy(w, &kept, sizeof(w));
	atomic_store_explicit(&e->lo, lo, memory_order_relaxed);
	atomic_store_explicit(&e->row[0], w[0], memory_order_relaxed);
	atomic_store_explicit(&e->row[1], w[1], memory_order_relaxed);
	uint64_t seq = (state + 2) & ROW_CACHE_SEQ_MASK;
	atomic_store_explicit(&e->state, row_cache_tag(id) | seq, memory_order_release);
	if (!written)
		(void)atomic_fetch_or_explicit(&t->pages, page, memory_order_relaxed);
}

/* ---- snapshot lookups [signal-safe] ---- */

static const struct unwind_code_range *find_code(const struct snapshot *s, uint64_t pc)
{
	uint32_t lo = rt_upper_bound(s->code, s->ncode, sizeof(s->code[0]),
				     offsetof(struct unwind_code_range, end), pc);
	if (lo < s->ncode && pc >= s->code[lo].start && pc < s->code[lo].end)
		return &s->code[lo];
	return NULL;
}

static bool find_data(const struct snapshot *s, uint64_t sp, uint64_t *lo_out, uint64_t *hi_out)
{
	uint32_t lo = rt_upper_bound(s->data, s->ndata, sizeof(s->data[0]),
				     offsetof(struct unwind_data_range, end), sp);
	if (lo >= s->ndata)
		return false;
	const struct unwind_data_range *r = &s->data[lo];
	if (sp >= r->start) {
		*lo_out = r->start;
		*hi_out = r->end;
		return true;
	}
	/* A grows-down stack may have grown since the snapshot, down to sp, as
	 * long as that does not reach into the previous range. */
	uint64_t prev_end = lo > 0 ? s->data[lo - 1].end : 0;
	if ((r->flags & UNWIND_DATA_GROWSDOWN) && r->start - sp <= GROWSDOWN_SLACK && sp >= prev_end) {
		*lo_out = sp & ~(uint64_t)4095;
		*hi_out = r->end;
		return true;
	}
	return false;
}

/* ---- bounded stack reads ---- */

#define REMOTE_BLOCK 512

/* ---- the stack memo (unwind_stack_memo) [signal-safe] ----
 *
 * Recent unwinds, each kept with where it started (the pc, the distance
 * from sp to the top of its stack, lr, the flags, the maximum and the
 * snapshot generation) and the stack words its result depended on, as
 * offsets from sp: every return address read, a saved frame pointer once a
 * rule used it, and the starting frame pointer itself when a rule used
 * that.  The walk is a function of those and nothing else, so an unwind
 * from the same place whose words still hold the same values would walk
 * the same frames: it copies them instead, reading a few stack words where
 * the walk probed rules and code ranges whose lines a sample taken every
 * few hundred microseconds finds cold.  A walk that crossed a signal frame,
 * read through the kernel, met code outside the snapshot or ran while code
 * reads were paused is not kept.  Threads share the entries (a pool's
 * threads run the same paths at the same depths of their stacks); one
 * holder at a time, and a walk that finds the memo held (another thread, a
 * handler interrupting the holder) walks without it.  A place is kept the
 * second time it is seen, so stacks that never repeat cost no copies. */
#define MEMO_ENTRIES 16u /* power of two */
#define MEMO_SEEN 64u    /* power of two */
#define MEMO_READS 96u
#define MEMO_PCS 64u
struct memo_read {
	uint64_t off, value;
};
struct memo_entry {
	uint64_t generation; /* 0: empty */
	uint64_t pc, to_top, lr, fp;
	uint32_t flags, max;
	bool fp_used; /* the walk used regs->fp: it is part of the key */
	bool spoiled; /* while recording: not to be kept */
	enum unwind_end end;
	uint32_t nreads, npcs;
	struct memo_read reads[MEMO_READS];
	uint64_t pcs[MEMO_PCS];
};
static struct memo_entry memo[MEMO_ENTRIES];
static uint32_t memo_seen[MEMO_SEEN];
static atomic_int memo_busy;
static _Atomic uint64_t stacks_from_memo;

struct stack_view {
	uint64_t lo, hi; /* reads must lie in [lo, hi) */
	bool remote;     /* read through process_vm_readv */
	int pid;
	/* Recording for the memo: the words that decide the walk, kept as
	 * offsets from base if they lie in [base, top). */
	struct memo_entry *rec;
	uint64_t base, top;
	uint64_t block_addr;
	bool block_valid;
	uint8_t block[REMOTE_BLOCK];
};

static void memo_spoil(struct stack_view *v)
{
	if (v->rec != NULL)
		v->rec->spoiled = true;
}

/* Notes that the walk's result depends on the word at addr holding value. */
static void memo_note(struct stack_view *v, uint64_t addr, uint64_t value)
{
	struct memo_entry *e = v->rec;
	if (e == NULL)
		return;
	if (v->remote || addr < v->base || addr >= v->top || v->top - addr < 8 ||
	    e->nreads >= MEMO_READS) {
		e->spoiled = true;
		return;
	}
	e->reads[e->nreads++] = (struct memo_read){ addr - v->base, value };
}

static bool read_word(struct stack_view *v, uint64_t addr, uint64_t *out)
{
	if ((addr & 7) != 0 || addr < v->lo || addr >= v->hi || v->hi - addr < 8)
		return false;
	if (!v->remote) {
		__builtin_memcpy(out, (const void *)(uintptr_t)addr, sizeof(*out));
		return true;
	}
	uint64_t block = addr & ~(uint64_t)(REMOTE_BLOCK - 1);
	if (!v->block_valid || v->block_addr != block) {
		/* Only the part of the block inside the bounds is requested. */
		uint64_t from = RT_MAX(block, v->lo & ~(uint64_t)7);
		uint64_t to = RT_MIN(block + REMOTE_BLOCK, v->hi);
		long got = sys_read_memory(v->pid, v->block + (from - block), from, (size_t)(to - from));
		if (got != (long)(to - from))
			return false;
		v->block_addr = block;
		v->block_valid = true;
		if (addr < from)
			return false;
	}
	__builtin_memcpy(out, v->block + (addr - block), sizeof(*out));
	return true;
}

/* Sets the view for a stack segment starting at sp. */
static void view_for_sp(struct stack_view *v, const struct snapshot *s, const struct unwind_regs *regs,
			uint64_t sp, bool force_remote)
{
	uint64_t lo = 0, hi = 0;
	bool known = false;
	if (regs->stack_hi != 0 && sp >= regs->stack_lo && sp < regs->stack_hi) {
		hi = regs->stack_hi;
		known = true;
	} else if (s != NULL && find_data(s, sp, &lo, &hi)) {
		known = true;
	}
	v->block_valid = false;
	v->lo = sp;
	if (known) {
		v->hi = hi;
		v->remote = force_remote;
	} else {
		v->hi = sp > UINT64_MAX - UNKNOWN_STACK_SPAN ? UINT64_MAX : sp + UNKNOWN_STACK_SPAN;
		v->remote = true;
	}
	if (v->remote && v->pid == 0)
		v->pid = (int)sys_getpid();
}

/* ---- code reads ---- */

static bool read_code(const struct snapshot *s, uint64_t addr, void *dst, size_t n)
{
	if (s == NULL || atomic_load_explicit(&code_reads_paused, memory_order_acquire) != 0)
		return false;
	const struct unwind_code_range *r = find_code(s, addr);
	if (r == NULL || !(r->flags & UNWIND_CODE_READABLE) || r->end - addr < n)
		return false;
	__builtin_memcpy(dst, (const void *)(uintptr_t)addr, n);
	return true;
}

bool unwind_take_unknown_code(void)
{
	return atomic_load_explicit(&unknown_code_seen, memory_order_relaxed) &&
	       atomic_exchange_explicit(&unknown_code_seen, false, memory_order_relaxed);
}

/* ---- frame steps (register numbers and layouts from rt/arch.h) ---- */

/* Where a frame's fp value came from, for the memo. */
enum fp_source {
	FP_FROM_REGS, /* the starting registers */
	FP_FROM_SLOT, /* a save slot (fp_slot) not noted yet */
	FP_NOTED,     /* a word already noted */
};

struct frame {
	uint64_t pc, sp, fp, lr;
	enum fp_source fp_source;
	uint64_t fp_slot;
	bool fp_known;
	bool lr_known; /* lr is this frame's link register (first frame, signal frames) */
	bool sp_exact; /* sp is the frame's stack pointer, not only a lower bound */
	bool exact;    /* pc is where execution continues, not a return address */
	bool from_lr;  /* the last step took the return address from lr */
};

enum step_result { STEP_OK, STEP_OUTERMOST, STEP_BROKEN };

static const uint8_t sigreturn_code[ARCH_SIGRETURN_LEN] = ARCH_SIGRETURN_CODE;

/* rt_sigreturn at pc, or pc inside it (a thread stopped in the kernel there). */
static bool at_sigreturn(const struct snapshot *s, uint64_t pc)
{
	uint8_t code[sizeof(sigreturn_code)];
	if (read_code(s, pc, code, sizeof(code)) &&
	    __builtin_memcmp(code, sigreturn_code, sizeof(code)) == 0)
		return true;
	return pc >= ARCH_SIGRETURN_SYSCALL_AT &&
	       read_code(s, pc - ARCH_SIGRETURN_SYSCALL_AT, code, sizeof(code)) &&
	       __builtin_memcmp(code, sigreturn_code, sizeof(code)) == 0;
}

/* The walk is about to use f->fp's value: the memo keys on where it came from. */
static void fp_consume(struct stack_view *v, struct frame *f)
{
	if (v->rec == NULL)
		return;
	if (f->fp_source == FP_FROM_REGS)
		v->rec->fp_used = true;
	else if (f->fp_source == FP_FROM_SLOT)
		memo_note(v, f->fp_slot, f->fp);
	f->fp_source = FP_NOTED;
}

/* The trampoline's frame: the handler's return left sp at the signal frame,
 * which holds the interrupted registers. */
static bool step_signal(struct stack_view *v, struct frame *f)
{
	memo_spoil(v);
	uint64_t pc, sp, fp, lr = 0;
	if (!read_word(v, f->sp + ARCH_SIGFRAME_PC, &pc) || !read_word(v, f->sp + ARCH_SIGFRAME_SP, &sp) ||
	    !read_word(v, f->sp + ARCH_SIGFRAME_FP, &fp))
		return false;
	if (ARCH_SIGFRAME_LR >= 0 && !read_word(v, f->sp + (uint64_t)ARCH_SIGFRAME_LR, &lr))
		return false;
	f->pc = pc;
	f->sp = sp;
	f->fp = fp;
	f->lr = lr;
	f->fp_known = true;
	f->lr_known = ARCH_SIGFRAME_LR >= 0;
	f->sp_exact = true;
	f->exact = true;
	f->from_lr = false;
	return true;
}

/* Frame record: [fp] = caller's fp, [fp + 8] = return address. */
static enum step_result step_fp(struct stack_view *v, struct frame *f)
{
	uint64_t saved_fp, ra;
	if (!f->fp_known)
		return STEP_BROKEN;
	fp_consume(v, f);
	if (f->fp == 0)
		return STEP_OUTERMOST;
	if (f->fp < f->sp || !read_word(v, f->fp, &saved_fp) || !read_word(v, f->fp + 8, &ra))
		return STEP_BROKEN;
	memo_note(v, f->fp, saved_fp);
	memo_note(v, f->fp + 8, ra);
	if (saved_fp != 0 && saved_fp <= f->fp)
		return STEP_BROKEN;
	f->sp = f->fp + 16;
	f->sp_exact = ARCH_FRAME_RECORD_AT_CFA;
	f->fp = saved_fp;
	f->fp_source = FP_NOTED;
	f->pc = arch_strip_pac(ra);
	f->lr_known = false;
	f->exact = false;
	f->from_lr = false;
	return STEP_OK;
}

static enum step_result step_cfi(struct stack_view *v, struct frame *f, const struct cfi_row *row)
{
	uint64_t base, cfa, ra;
	const bool ra_in_lr = row->ra_offset == CFI_RA_IN_LINK_REGISTER;
	if (row->cfa_reg == CFI_REG_SP) {
		if (!f->sp_exact)
			return STEP_BROKEN;
		base = f->sp;
	} else {
		if (!f->fp_known)
			return STEP_BROKEN;
		fp_consume(v, f);
		if (f->fp < f->sp)
			return STEP_BROKEN;
		base = f->fp;
	}
	cfa = base + (uint64_t)(int64_t)row->cfa_offset;
	if (row->kind == CFI_PLT && (f->pc & 15) >= row->plt_threshold)
		cfa += 8;
	/* Only a frame whose return address is still in lr may have no stack. */
	if (cfa < base || cfa < f->sp || (cfa == f->sp && !ra_in_lr))
		return STEP_BROKEN;
	if (ra_in_lr) {
		if (!f->lr_known)
			return STEP_BROKEN;
		ra = f->lr;
	} else if (!read_word(v, cfa + (uint64_t)(int64_t)row->ra_offset, &ra)) {
		return STEP_BROKEN;
	} else {
		memo_note(v, cfa + (uint64_t)(int64_t)row->ra_offset, ra);
	}
	if (row->fp_offset == CFI_FP_UNKNOWN) {
		f->fp_known = false;
	} else if (row->fp_offset != CFI_FP_SAME) {
		uint64_t slot = cfa + (uint64_t)(int64_t)row->fp_offset;
		/* A save slot below sp was popped, which restored the register:
		 * compilers keep the save rule after `pop %rbp`/`leave` up to
		 * the `ret`, so the register, not the slot, is the caller's. */
		if (slot >= f->sp) {
			uint64_t fp;
			if (!read_word(v, slot, &fp))
				return STEP_BROKEN;
			f->fp = fp;
			f->fp_known = true;
			f->fp_source = FP_FROM_SLOT;
			f->fp_slot = slot;
		}
	}
	f->sp = cfa;
	f->sp_exact = true;
	f->pc = arch_strip_pac(ra);
	f->lr_known = false;
	f->exact = false;
	f->from_lr = ra_in_lr;
	return STEP_OK;
}

/* ---- one unwind's walk [signal-safe] ---- */

/* What one unwind carries from frame to frame: the snapshot, the last
 * stack's rows it holds (below), and the code range of the last pc looked
 * up: consecutive frames are mostly in one module, and a binary search of
 * the snapshot per frame read lines that went cold between samples. */
struct last_frame;
struct row_walk {
	const struct snapshot *s;
	uint32_t flags;
	bool held; /* this unwind holds last_stack */
	const struct last_frame *last;
	uint32_t nlast, next;
	struct last_frame *out;
	uint32_t nout, hits;
	const struct unwind_code_range *near; /* NULL: none yet */
};

static const struct unwind_code_range *walk_code(struct row_walk *w, uint64_t pc)
{
	const struct unwind_code_range *r = w->near;
	if (r != NULL && pc >= r->start && pc < r->end)
		return r;
	r = w->s != NULL ? find_code(w->s, pc) : NULL;
	if (r != NULL)
		w->near = r;
	return r;
}

/* Whether pc is in the snapshot's code; a miss asks for a refresh. */
static bool walk_is_code(struct row_walk *w, uint64_t pc)
{
	if (walk_code(w, pc) != NULL)
		return true;
	ask_refresh();
	return false;
}

/* The rule at pc into *buf: from the row cache, else read from the
 * module's .eh_frame (our own mapping of its file, alive as long as the
 * snapshot) and cached. */
static const struct cfi_row *cfi_for(struct row_walk *w, uint64_t pc, bool exact,
				     struct cfi_row *buf)
{
	const struct unwind_code_range *r = walk_code(w, pc);
	if (r == NULL || r->cfi == NULL)
		return NULL;
	int cached = r->id != 0 ? row_cache_get(pc, exact, r->id, buf) : -1;
	if (cached >= 0)
		return cached ? buf : NULL;
	atomic_fetch_add_explicit(&rule_lookups, 1, memory_order_relaxed);
	uint64_t lo = 0, hi = 0;
	bool found = cfi_index_lookup_span(r->cfi, pc - r->bias, buf, &lo, &hi);
	if (!found) {
		rt_memset(buf, 0, sizeof(*buf));
		buf->kind = CFI_NONE;
	}
	/* The span, at run time and within the mapping. */
	lo = RT_MAX(lo + r->bias, r->start);
	hi = RT_MIN(hi + r->bias, r->end);
	if (r->id != 0 && lo <= pc && pc < hi)
		row_cache_put(pc, exact, lo, hi, r->id, buf);
	return found ? buf : NULL;
}

/* ---- the last stack's rows [signal-safe] ----
 *
 * Stacks taken one after another on a thread share their outer frames, and
 * each row-cache probe of such a frame reads a line that went cold since.
 * The frames of the last unwind are kept in the order walked (stack pointer
 * increasing) with their rows: the next unwind walks them alongside its own
 * frames, and one at the same stack pointer with the same pc gives its row,
 * read in sequence, not probed.  One unwind at a time holds them (another,
 * or a handler interrupting the holder, uses the row cache alone); a row
 * depends only on the pc and the snapshot generation, so a frame of another
 * stack that happens to match still gets its own pc's row. */
#define LAST_STACK_FRAMES 128
struct last_frame {
	uint64_t sp, pc; /* the frame's stack pointer, the pc its row is for */
	struct cfi_row row; /* kind CFI_NONE: no rule */
};
static struct last_frame last_stack[2][LAST_STACK_FRAMES];
static uint32_t last_stack_current, last_stack_count;
static uint64_t last_stack_generation;
static atomic_int last_stack_busy;

static void row_walk_begin(struct row_walk *w, const struct snapshot *s, uint32_t flags)
{
	rt_memset(w, 0, sizeof(*w));
	w->s = s;
	w->flags = flags;
	if (s == NULL || (flags & UNWIND_FLAG_FP_ONLY) ||
	    atomic_exchange_explicit(&last_stack_busy, 1, memory_order_acquire) != 0)
		return;
	w->held = true;
	w->last = last_stack[last_stack_current];
	w->nlast = last_stack_generation == s->generation ? last_stack_count : 0;
	w->out = last_stack[last_stack_current ^ 1];
}

static void row_walk_end(struct row_walk *w)
{
	if (!w->held)
		return;
	last_stack_current ^= 1;
	last_stack_count = w->nout;
	last_stack_generation = w->s->generation;
	atomic_store_explicit(&last_stack_busy, 0, memory_order_release);
	if (w->hits > 0)
		atomic_fetch_add_explicit(&rows_from_last_stack, w->hits, memory_order_relaxed);
}

/* The CFI row for frame f (NULL: none, or frame pointers only). */
static const struct cfi_row *row_for(struct row_walk *w, const struct frame *f, struct cfi_row *buf)
{
	if (w->flags & UNWIND_FLAG_FP_ONLY)
		return NULL;
	uint64_t pc = f->exact ? f->pc : f->pc - 1;
	if (!w->held)
		return cfi_for(w, pc, f->exact, buf);
	const struct cfi_row *row;
	while (w->next < w->nlast && w->last[w->next].sp < f->sp)
		w->next++;
	if (w->next < w->nlast && w->last[w->next].sp == f->sp && w->last[w->next].pc == pc) {
		*buf = w->last[w->next].row;
		w->next++;
		w->hits++;
		row = buf->kind == CFI_NONE ? NULL : buf;
	} else {
		row = cfi_for(w, pc, f->exact, buf);
	}
	if (w->nout < LAST_STACK_FRAMES) {
		struct last_frame *o = &w->out[w->nout++];
		o->sp = f->sp;
		o->pc = pc;
		if (row != NULL) {
			o->row = *row;
		} else {
			rt_memset(&o->row, 0, sizeof(o->row));
			o->row.kind = CFI_NONE;
		}
	}
	return row;
}

/* True when f's pc is a signal trampoline: an 'S' FDE says so, or, where no
 * usable CFI row exists, the code bytes are rt_sigreturn. */
static bool at_signal_trampoline(const struct snapshot *s, const struct frame *f,
				 const struct cfi_row *row)
{
	if (row != NULL && row->kind == CFI_SIGNAL)
		return true;
	if (row != NULL && row->kind != CFI_UNSUPPORTED)
		return false;
	return at_sigreturn(s, f->pc);
}

/* One step from frame f to its caller. */
static enum step_result step(struct stack_view *v, struct frame *f, const struct cfi_row *row)
{
	if (row != NULL) {
		switch (row->kind) {
		case CFI_OUTERMOST:
			return STEP_OUTERMOST;
		case CFI_NORMAL:
		case CFI_PLT:
			/* An sp known only as a bound (after a frame record that
			 * need not sit at the CFA) cannot anchor an sp rule. */
			if (row->cfa_reg == CFI_REG_SP && !f->sp_exact)
				break;
			return step_cfi(v, f, row);
		default:
			break; /* unsupported rule: frame pointers */
		}
	}
	return step_fp(v, f);
}

/* The walk itself, on snapshot s (held by the caller), max > 0.  With rec,
 * notes what its result depends on there (the memo). */
static uint32_t walk(const struct snapshot *s, const struct unwind_regs *regs, uint64_t *pcs,
		     uint32_t max, uint32_t flags, enum unwind_end *end, struct memo_entry *rec)
{
	enum unwind_end why = UNWIND_END_BROKEN;
	uint32_t n = 0;
	uint32_t signal_frames = 0;
	const bool remote = (flags & UNWIND_FLAG_REMOTE) != 0;
	struct stack_view view;
	struct frame f;
	view.pid = 0;
	view.rec = rec;
	view.base = regs->sp;
	view.top = regs->stack_hi;
	view_for_sp(&view, s, regs, regs->sp, remote);
	f.pc = regs->pc;
	f.sp = regs->sp;
	f.fp = regs->fp;
	f.lr = regs->lr;
	f.fp_source = FP_FROM_REGS;
	f.fp_slot = 0;
	f.fp_known = true;
	f.exact = (flags & UNWIND_FLAG_CALLER) == 0;
	f.lr_known = f.exact && regs->lr != 0;
	f.sp_exact = (flags & UNWIND_FLAG_SP_BOUND) == 0;
	f.from_lr = false;
	pcs[n++] = f.exact ? f.pc : f.pc - 1;
	struct cfi_row row_buf;
	struct row_walk rows;
	row_walk_begin(&rows, s, flags);
	/* Notes code mapped since the snapshot. */
	bool unknown = !walk_is_code(&rows, f.exact ? f.pc : f.pc - 1);
	const struct cfi_row *row = row_for(&rows, &f, &row_buf);
	bool trampoline = at_signal_trampoline(s, &f, row);
	/* Invariant n == i + 1: each iteration writes one pc or stops. */
	for (uint32_t i = 0; i < max; i++) {
		if (trampoline && !f.sp_exact) {
			/* Reached through a frame record that need not sit at the
			 * CFA: the signal frame's place is unknown, but the kernel's
			 * frame record for the interrupted code is the next link. */
			memo_spoil(&view);
			if (++signal_frames > MAX_SIGNAL_FRAMES)
				break;
			uint64_t old_sp = f.sp;
			enum step_result r = step_fp(&view, &f);
			if (r == STEP_OUTERMOST || (r == STEP_OK && f.pc == 0)) {
				why = UNWIND_END_OUTERMOST;
				break;
			}
			if (r != STEP_OK || f.sp <= old_sp)
				break;
			if (!walk_is_code(&rows, f.pc)) {
				unknown = true;
				break;
			}
			view_for_sp(&view, s, regs, f.sp, remote);
		} else if (trampoline) {
			if (++signal_frames > MAX_SIGNAL_FRAMES || !step_signal(&view, &f))
				break;
			if (f.pc == 0) {
				why = UNWIND_END_OUTERMOST;
				break;
			}
			if (!walk_is_code(&rows, f.pc)) {
				unknown = true;
				break;
			}
			view_for_sp(&view, s, regs, f.sp, remote);
		} else {
			uint64_t old_sp = f.sp;
			enum step_result r = step(&view, &f, row);
			if (r == STEP_OUTERMOST || (r == STEP_OK && f.pc == 0)) {
				why = UNWIND_END_OUTERMOST;
				break;
			}
			/* sp grows toward the caller; it stays put only when the
			 * return address came from lr (at most once). */
			if (r != STEP_OK || f.sp < old_sp || (f.sp == old_sp && !f.from_lr))
				break;
			if (!walk_is_code(&rows, f.pc)) {
				unknown = true;
				break;
			}
		}
		row = row_for(&rows, &f, &row_buf);
		trampoline = at_signal_trampoline(s, &f, row);
		if (n == max) {
			why = UNWIND_END_TRUNCATED;
			break;
		}
		pcs[n++] = f.exact || trampoline ? f.pc : f.pc - 1;
	}
	row_walk_end(&rows);
	if (unknown) {
		atomic_fetch_add_explicit(&unknown_code_unwinds, 1, memory_order_relaxed);
		memo_spoil(&view);
	}
	*end = why;
	return n;
}

uint32_t unwind_stack(const struct unwind_regs *regs, uint64_t *pcs, uint32_t max,
		      uint32_t flags, enum unwind_end *end)
{
	enum unwind_end why = UNWIND_END_TRUNCATED;
	uint32_t n = 0;
	if (max > 0) {
		atomic_fetch_add(&active_unwinders, 1);
		n = walk(atomic_load(&current_snapshot), regs, pcs, max, flags, &why, NULL);
		atomic_fetch_sub(&active_unwinders, 1);
	}
	if (end != NULL)
		*end = why;
	return n;
}

static uint32_t memo_hash(const struct unwind_regs *regs, uint32_t flags, uint32_t max)
{
	uint64_t h = (regs->pc ^ ((regs->stack_hi - regs->sp) << 20) ^ ((uint64_t)flags << 56) ^ max) *
		     RT_HASH_MUL64;
	h ^= regs->lr * RT_HASH_MUL64;
	return (uint32_t)(h >> 32);
}

/* Whether e was kept for an unwind from regs on generation gen, and the
 * stack words it depended on still hold what it read. */
static bool memo_matches(const struct memo_entry *e, const struct unwind_regs *regs, uint32_t flags,
			 uint32_t max, uint64_t gen)
{
	if (e->generation != gen || e->pc != regs->pc || e->to_top != regs->stack_hi - regs->sp ||
	    e->lr != regs->lr || e->flags != flags || e->max != max ||
	    (e->fp_used && e->fp != regs->fp))
		return false;
	for (uint32_t i = 0; i < e->nreads; i++) {
		uint64_t w;
		__builtin_memcpy(&w, (const void *)(uintptr_t)(regs->sp + e->reads[i].off), sizeof(w));
		if (w != e->reads[i].value)
			return false;
	}
	return true;
}

uint32_t unwind_stack_memo(const struct unwind_regs *regs, uint64_t *pcs, uint32_t max,
			   uint32_t flags, enum unwind_end *end)
{
	if (max == 0 || (flags & (UNWIND_FLAG_REMOTE | UNWIND_FLAG_FP_ONLY)) != 0 ||
	    regs->stack_hi == 0 || regs->sp < regs->stack_lo || regs->sp >= regs->stack_hi ||
	    atomic_load_explicit(&code_reads_paused, memory_order_acquire) != 0 ||
	    atomic_exchange_explicit(&memo_busy, 1, memory_order_acquire) != 0)
		return unwind_stack(regs, pcs, max, flags, end);
	atomic_fetch_add(&active_unwinders, 1);
	const struct snapshot *s = atomic_load(&current_snapshot);
	enum unwind_end why = UNWIND_END_BROKEN;
	uint32_t n;
	uint32_t h = memo_hash(regs, flags, max);
	struct memo_entry *e = &memo[h & (MEMO_ENTRIES - 1u)];
	uint32_t *seen = &memo_seen[(h >> 8) & (MEMO_SEEN - 1u)];
	if (s != NULL && memo_matches(e, regs, flags, max, s->generation)) {
		n = RT_MIN(e->npcs, max);
		rt_memcpy(pcs, e->pcs, n * sizeof(pcs[0]));
		why = e->end;
		atomic_fetch_add_explicit(&stacks_from_memo, 1, memory_order_relaxed);
	} else if (s == NULL || *seen != (h | 1u)) {
		/* First sighting: walk without keeping it. */
		*seen = h | 1u;
		n = walk(s, regs, pcs, max, flags, &why, NULL);
	} else {
		e->generation = 0;
		e->nreads = 0;
		e->fp_used = false;
		e->spoiled = false;
		n = walk(s, regs, pcs, max, flags, &why, e);
		if (!e->spoiled && n <= MEMO_PCS &&
		    atomic_load_explicit(&code_reads_paused, memory_order_acquire) == 0) {
			e->pc = regs->pc;
			e->to_top = regs->stack_hi - regs->sp;
			e->lr = regs->lr;
			e->fp = regs->fp;
			e->flags = flags;
			e->max = max;
			e->end = why;
			e->npcs = n;
			rt_memcpy(e->pcs, pcs, n * sizeof(pcs[0]));
			e->generation = s->generation;
		}
	}
	atomic_fetch_sub(&active_unwinders, 1);
	atomic_store_explicit(&memo_busy, 0, memory_order_release);
	if (end != NULL)
		*end = why;
	return n;
}

/* ---- publication (off the signal path) ---- */

static void snapshot_free(struct snapshot *s)
{
	if (s == NULL)
		return;
	rt_free((void *)(uintptr_t)s->code);
	rt_free((void *)(uintptr_t)s->data);
	rt_free(s);
}

/* Waits briefly for every running unwinder to finish; true if seen idle.
 * Unwinders take microseconds, so this normally succeeds at once. */
static bool wait_unwinders_idle(void)
{
	for (int i = 0; i < 200; i++) {
		if (atomic_load(&active_unwinders) == 0)
			return true;
		if (i < 100)
			(void)sys_sched_yield();
		else
			(void)rt_sleep_ns(100000);
	}
	return false;
}

bool unwind_reclaim(void)
{
	if (nretired == 0)
		return true;
	if (!wait_unwinders_idle())
		return false;
	for (uint32_t i = 0; i < nretired; i++) {
		snapshot_free(retired[i]);
		retired[i] = NULL;
	}
	nretired = 0;
	return true;
}

bool unwind_publish(const struct unwind_code_range *code, uint32_t ncode,
		    const struct unwind_data_range *data, uint32_t ndata)
{
	row_cache_create();
	struct snapshot *s = rt_calloc(1, sizeof(*s));
	struct unwind_code_range *c = rt_calloc(ncode ? ncode : 1, sizeof(*c));
	struct unwind_data_range *d = rt_calloc(ndata ? ndata : 1, sizeof(*d));
	if (s == NULL || c == NULL || d == NULL) {
		rt_free(s);
		rt_free(c);
		rt_free(d);
		return false;
	}
	if (ncode > 0)
		rt_memcpy(c, code, ncode * sizeof(*c));
	if (ndata > 0)
		rt_memcpy(d, data, ndata * sizeof(*d));
	static uint64_t generations;
	s->generation = ++generations;
	s->code = c;
	s->ncode = ncode;
	s->data = d;
	s->ndata = ndata;
	if (nretired == RETIRED_MAX && !unwind_reclaim()) {
		/* Something keeps an unwinder busy for seconds: keep the old
		 * snapshot published rather than free memory in use. */
		snapshot_free(s);
		rt_warn("unwind: snapshot not published, an unwinder never finishes");
		return false;
	}
	struct snapshot *old = atomic_exchange(&current_snapshot, s);
	if (old != NULL)
		retired[nretired++] = old;
	(void)unwind_reclaim();
	return true;
}

bool unwind_stack_bounds(uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	atomic_fetch_add(&active_unwinders, 1);
	const struct snapshot *s = atomic_load(&current_snapshot);
	bool found = s != NULL && find_data(s, sp, lo, hi);
	atomic_fetch_sub(&active_unwinders, 1);
	/* A stack mapped since the snapshot (a new thread's): a refresh makes
	 * the next lookup cheap for every caller. */
	if (!found)
		ask_refresh();
	return found;
}

bool unwind_code_flags(uint64_t pc, uint32_t *flags)
{
	atomic_fetch_add(&active_unwinders, 1);
	const struct snapshot *s = atomic_load(&current_snapshot);
	/* A probe, not a pc met by an unwind: a miss asks for no refresh. */
	const struct unwind_code_range *r = s != NULL ? find_code(s, pc) : NULL;
	*flags = r != NULL ? r->flags : 0;
	atomic_fetch_sub(&active_unwinders, 1);
	return r != NULL;
}

void unwind_after_fork_child(void)
{
	last_stack_count = 0;
	atomic_store(&last_stack_busy, 0);
	atomic_store(&memo_busy, 0);
}

bool unwind_function_start(uint64_t pc, uint64_t *start)
{
	atomic_fetch_add(&active_unwinders, 1);
	const struct snapshot *s = atomic_load(&current_snapshot);
	const struct unwind_code_range *r = s != NULL ? find_code(s, pc) : NULL;
	uint64_t link = 0;
	bool found = r != NULL && r->cfi != NULL && pc >= r->bias &&
		     cfi_index_function_start(r->cfi, pc - r->bias, &link);
	if (found)
		*start = link + r->bias;
	atomic_fetch_sub(&active_unwinders, 1);
	return found;
}

bool unwind_after_syscall(uint64_t pc)
{
	static const uint8_t insn[ARCH_SYSCALL_INSN_LEN] = ARCH_SYSCALL_INSN;
	if (pc < sizeof(insn))
		return false;
	uint8_t code[sizeof(insn)];
	atomic_fetch_add(&active_unwinders, 1);
	bool found = read_code(atomic_load(&current_snapshot), pc - sizeof(insn), code, sizeof(code)) &&
		     __builtin_memcmp(code, insn, sizeof(insn)) == 0;
	atomic_fetch_sub(&active_unwinders, 1);
	return found;
}

void unwind_code_reads_pause(void) { atomic_fetch_add(&code_reads_paused, 1); }

void unwind_code_reads_resume(void) { atomic_fetch_sub(&code_reads_paused, 1); }

void unwind_regs_from_ucontext(const void *ucontext, struct unwind_regs *out)
{
	rt_memset(out, 0, sizeof(*out));
	arch_ucontext_regs(ucontext, &out->pc, &out->sp, &out->fp, &out->lr);
}

void unwind_counts_get(struct unwind_counts *out)
{
	out->unknown_code = atomic_load_explicit(&unknown_code_unwinds, memory_order_relaxed);
	out->rule_lookups = atomic_load_explicit(&rule_lookups, memory_order_relaxed);
	out->rows_from_last_stack = atomic_load_explicit(&rows_from_last_stack, memory_order_relaxed);
	out->stacks_from_memo = atomic_load_explicit(&stacks_from_memo, memory_order_relaxed);
}
