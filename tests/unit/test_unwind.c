/* The .eh_frame interpreter checked row by row against readelf's own
 * interpretation, and the stack walker on hand-built and real stacks. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/sample.h"
#include "profile/profile.h"
#include "rt/arch.h"
#include "symbols/elf.h"
#include "symbols/symbols.h"
#include "unit/check.h"
#include "unwind/cfi.h"
#include "unwind/unwind.h"

static uint8_t *read_whole(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)len);
	*n = fread(buf, 1, (size_t)len, f);
	fclose(f);
	return buf;
}

/* Compares every row `readelf --debug-dump=frames-interp` prints for path
 * with our table's row at the same address.  Returns rows compared. */
static int compare_with_readelf(const char *path, int *mismatches)
{
	size_t n;
	uint8_t *buf = read_whole(path, &n);
	struct elf_image img;
	struct elf_section eh;
	uint64_t lo, hi;
	*mismatches = 0;
	if (buf == NULL || !elf_open(&img, buf, n) || !elf_eh_frame(&img, &eh) ||
	    !elf_load_range(&img, &lo, &hi))
		return 0;
	struct cfi_table *t = cfi_table_build(buf + eh.offset, eh.size, eh.addr, lo, hi - lo);
	if (t == NULL)
		return 0;
	char cmd[512], line[1024];
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	int compared = 0;
	int rbp_col = -1, ra_col = -1, in_fde = 0;
	while (p != NULL && fgets(line, sizeof(line), p)) {
		char *tok[32];
		int nt = 0;
		for (char *s = strtok(line, " \n"); s && nt < 32; s = strtok(NULL, " \n")) {
			if (s[0] == '(' && nt > 0)
				continue; /* "r10 (r10)": the name after a register is one column */
			tok[nt++] = s;
		}
		if (nt == 0)
			continue;
		if (nt >= 4 && strcmp(tok[3], "FDE") == 0) {
			in_fde = 1;
			continue;
		}
		if (nt >= 4 && strcmp(tok[3], "CIE") == 0) {
			in_fde = 0;
			continue;
		}
		if (strcmp(tok[0], "LOC") == 0) {
			rbp_col = ra_col = -1;
			for (int i = 0; i < nt; i++) {
				if (strcmp(tok[i], "rbp") == 0)
					rbp_col = i;
				if (strcmp(tok[i], "ra") == 0)
					ra_col = i;
			}
			continue;
		}
		if (!in_fde || ra_col < 0 || nt <= ra_col || strlen(tok[0]) != 16)
			continue;
		uint64_t loc = strtoull(tok[0], NULL, 16);
		const struct cfi_row *row = cfi_table_lookup(t, loc);
		const char *cfa = tok[1], *ra = tok[ra_col];
		const char *rbp = rbp_col >= 0 ? tok[rbp_col] : "u";
		int ok = row != NULL;
		if (ok && strcmp(ra, "u") == 0) {
			ok = row->kind == CFI_OUTERMOST;
		} else if (ok && strcmp(cfa, "exp") == 0) {
			ok = row->kind == CFI_PLT || row->kind == CFI_UNSUPPORTED || row->kind == CFI_SIGNAL;
		} else if (ok && (strncmp(cfa, "rsp+", 4) == 0 || strncmp(cfa, "rbp+", 4) == 0) &&
			   strncmp(ra, "c-", 2) == 0) {
			ok = row->kind == CFI_NORMAL &&
			     row->cfa_reg == (cfa[1] == 's' ? CFI_REG_SP : CFI_REG_FP) &&
			     row->cfa_offset == atoi(cfa + 4) && row->ra_offset == -atoi(ra + 2);
			if (strcmp(rbp, "u") == 0)
				ok = ok && row->fp_offset == CFI_FP_SAME;
			else if (strncmp(rbp, "c-", 2) == 0)
				ok = ok && row->fp_offset == -atoi(rbp + 2);
			else
				ok = ok && row->fp_offset == CFI_FP_UNKNOWN;
		} else if (ok) {
			ok = row->kind == CFI_UNSUPPORTED || row->kind == CFI_SIGNAL;
		}
		compared++;
		if (!ok && (*mismatches)++ < 5)
			fprintf(stderr, "  %s: mismatch at %s cfa=%s rbp=%s ra=%s (kind %d)\n", path,
				tok[0], cfa, rbp, ra, row ? row->kind : -1);
	}
	if (p != NULL)
		pclose(p);
	cfi_table_free(t);
	free(buf);
	return compared;
}

static void test_cfi_matches_readelf_libc(void)
{
	int mism;
	int n = compare_with_readelf("/usr/lib/x86_64-linux-gnu/libc.so.6", &mism);
	printf("  libc: %d rows compared, %d mismatches\n", n, mism);
	CHECK(n > 10000 && mism == 0);
}

static void test_cfi_matches_readelf_self(void)
{
	char path[256];
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
	int mism;
	CHECK(len > 0);
	path[len > 0 ? len : 0] = 0;
	int n = compare_with_readelf(path, &mism);
	CHECK(n > 20 && mism == 0);
}

/* The rules looked up in place (through .eh_frame_hdr's table, and through
 * a search table built for modules without one) equal the built table's at
 * the first, second and last address of every row. */
static bool same_rule(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->kind == b->kind && a->cfa_reg == b->cfa_reg && a->cfa_offset == b->cfa_offset &&
	       a->ra_offset == b->ra_offset && a->fp_offset == b->fp_offset &&
	       a->plt_threshold == b->plt_threshold;
}

/* 64 KiB windows of the address space that [p, p + n) spans. */
static uint64_t windows_spanned(const uint8_t *p, uint64_t n)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	return ((a + n - 1) >> 16) - (a >> 16) + 1;
}

/* After every FDE was looked up, the read windows are exactly those of
 * .eh_frame and (in place) of the table: every window holds an entry a
 * lookup read; after forgetting, one lookup reads a few windows. */
static void check_read_windows(struct cfi_index *in_place, struct cfi_index *built,
			       const struct cfi_table *t)
{
	uint64_t eh = windows_spanned(in_place->eh_frame, in_place->eh_frame_size);
	uint64_t tab = windows_spanned(in_place->table, (uint64_t)in_place->count * 8);
	uint64_t a_end = (uint64_t)(uintptr_t)in_place->table + (uint64_t)in_place->count * 8 - 1;
	uint64_t b_beg = (uint64_t)(uintptr_t)in_place->eh_frame;
	uint64_t e_end = b_beg + in_place->eh_frame_size - 1;
	uint64_t a_beg = (uint64_t)(uintptr_t)in_place->table;
	/* Windows both ranges touch count once. */
	uint64_t shared = 0;
	for (uint64_t w = RT_MAX(a_beg, b_beg) >> 16; w <= RT_MIN(a_end, e_end) >> 16; w++)
		shared++;
	printf("  read windows: in place %llu KiB (eh_frame %llu, table %llu windows), built %llu KiB\n",
	       (unsigned long long)(cfi_index_read_bytes(in_place) >> 10), (unsigned long long)eh,
	       (unsigned long long)tab, (unsigned long long)(cfi_index_read_bytes(built) >> 10));
	CHECK(cfi_index_read_bytes(in_place) == (eh + tab - shared) << 16);
	CHECK(cfi_index_read_bytes(built) == eh << 16);
	cfi_index_forget_reads(in_place);
	CHECK(cfi_index_read_bytes(in_place) == 0);
	struct cfi_row got;
	uint64_t pc = t->base + t->rows[t->nrows / 2].pc;
	(void)cfi_index_lookup(in_place, pc, &got);
	uint64_t one = cfi_index_read_bytes(in_place);
	/* The probes of one binary search, the FDE and its CIE. */
	uint32_t probes = 1;
	while ((1u << probes) <= in_place->count)
		probes++;
	CHECK(one >= (1u << 16) && one <= (uint64_t)(probes + 4) << 16);
	cfi_index_forget_reads(in_place);
}

static void compare_index_with_table(const char *path)
{
	size_t n;
	uint8_t *buf = read_whole(path, &n);
	struct elf_image img;
	struct elf_section eh, hdr;
	uint64_t lo, hi;
	CHECK(buf != NULL && elf_open(&img, buf, n) && elf_eh_frame(&img, &eh) &&
	      elf_eh_frame_hdr(&img, &hdr) && elf_load_range(&img, &lo, &hi));
	if (buf == NULL)
		return;
	struct cfi_table *t = cfi_table_build(buf + eh.offset, eh.size, eh.addr, lo, hi - lo);
	struct cfi_index in_place, built;
	CHECK(t != NULL);
	CHECK(cfi_index_from_hdr(&in_place, buf + hdr.offset, hdr.size, hdr.addr, buf + eh.offset,
				 eh.size, eh.addr));
	CHECK(in_place.owned_bytes == 0 && in_place.count > 0);
	CHECK(cfi_index_build(&built, buf + eh.offset, eh.size, eh.addr, lo, hi - lo));
	CHECK(built.count == in_place.count && built.owned_bytes == 8u * built.count);
	uint32_t compared = 0, mismatches = 0, spans_outside = 0;
	uint64_t span_bytes = 0;
	for (uint32_t i = 0; t != NULL && i < t->nrows; i++) {
		uint64_t first = t->base + t->rows[i].pc;
		uint64_t next = i + 1 < t->nrows ? t->base + t->rows[i + 1].pc : first + 1;
		uint64_t at[3] = {first, first + 1 < next ? first + 1 : first, next - 1};
		for (int k = 0; k < 3; k++) {
			const struct cfi_row *want = cfi_table_lookup(t, at[k]);
			struct cfi_index *ixs[2] = {&in_place, &built};
			for (int j = 0; j < 2; j++) {
				struct cfi_row got;
				uint64_t span_lo = 0, span_hi = 0;
				bool found = cfi_index_lookup_span(ixs[j], at[k], &got, &span_lo, &span_hi);
				bool ok = found == (want != NULL) && (!found || same_rule(&got, want));
				compared++;
				if (!ok && mismatches++ < 5)
					fprintf(stderr, "  %s: %s lookup differs at %#llx\n", path,
						j == 0 ? "in-place" : "built", (unsigned long long)at[k]);
				/* The span holds the address and lies within the table's
				 * row there (which merges equal neighbours). */
				bool inside = span_lo <= at[k] && at[k] < span_hi &&
					      (!found || (first <= span_lo &&
							  (i + 1 == t->nrows || span_hi <= next)));
				span_bytes += span_hi - span_lo;
				if (!inside && spans_outside++ < 5)
					fprintf(stderr, "  %s: span [%#llx, %#llx) of %#llx outside row [%#llx, %#llx)\n",
						path, (unsigned long long)span_lo, (unsigned long long)span_hi,
						(unsigned long long)at[k], (unsigned long long)first,
						(unsigned long long)next);
			}
		}
	}
	printf("  %s: %u lookups compared, %u mismatches, %u spans outside their row, %.1f bytes per span\n",
	       path, compared, mismatches, spans_outside, compared ? (double)span_bytes / compared : 0.0);
	CHECK(compared > 1000 && mismatches == 0 && spans_outside == 0);
	check_read_windows(&in_place, &built, t);
	/* A header that points elsewhere, or a truncated one, is refused. */
	struct cfi_index bad;
	CHECK(!cfi_index_from_hdr(&bad, buf + hdr.offset, hdr.size, hdr.addr, buf + eh.offset,
				  eh.size, eh.addr + 8));
	CHECK(!cfi_index_from_hdr(&bad, buf + hdr.offset, 16, hdr.addr, buf + eh.offset, eh.size,
				  eh.addr));
	cfi_index_free(&built);
	cfi_table_free(t);
	free(buf);
}

/* The C library this program runs with, found in its mappings. */
static bool mapped_libc(char *path, size_t cap)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	bool found = false;
	while (f != NULL && !found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p == NULL || (strstr(p, "/libc.so") == NULL && strstr(p, "/libc.musl") == NULL &&
				  strstr(p, "/ld-musl") == NULL))
			continue;
		p[strcspn(p, "\n")] = 0;
		snprintf(path, cap, "%s", p);
		found = true;
	}
	if (f != NULL)
		fclose(f);
	return found;
}

static void test_index_matches_table(void)
{
	char libc[512];
	char self[256];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(len > 0);
	self[len > 0 ? len : 0] = 0;
	compare_index_with_table(self);
	CHECK(mapped_libc(libc, sizeof(libc)));
	compare_index_with_table(libc);
}

/* ---- the walker ---- */

__attribute__((noinline)) static uint64_t code_address_a(void) { return (uint64_t)(uintptr_t)__builtin_return_address(0); }
__attribute__((noinline)) static uint64_t code_address_b(void) { return (uint64_t)(uintptr_t)__builtin_return_address(0); }

/* A hand-built frame-pointer chain in a buffer given as the stack bounds. */
static void test_fp_chain_on_fake_stack(void)
{
	uint64_t stack[64];
	memset(stack, 0, sizeof(stack));
	uint64_t ra1 = code_address_a(), ra2 = code_address_b();
	/* frame 1 at stack[8]: saved fp -> stack[16], ra1; frame 2 at stack[16]: fp 0, ra2 */
	stack[8] = (uint64_t)(uintptr_t)&stack[16];
	stack[9] = ra1;
	stack[16] = 0;
	stack[17] = ra2;
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	r.pc = ra1;
	r.sp = (uint64_t)(uintptr_t)&stack[0];
	r.fp = (uint64_t)(uintptr_t)&stack[8];
	r.stack_lo = (uint64_t)(uintptr_t)&stack[0];
	r.stack_hi = (uint64_t)(uintptr_t)&stack[64];
	uint64_t pcs[8];
	enum unwind_end end;
	uint32_t d = unwind_stack(&r, pcs, 8, UNWIND_FLAG_FP_ONLY, &end);
	CHECK_EQ_U64(d, 3);
	CHECK(pcs[0] == ra1 && pcs[1] == ra1 - 1 && pcs[2] == ra2 - 1);
	CHECK(end == UNWIND_END_OUTERMOST);
	/* Truncation at max. */
	d = unwind_stack(&r, pcs, 2, UNWIND_FLAG_FP_ONLY, &end);
	CHECK(d == 2 && end == UNWIND_END_TRUNCATED);
	/* A frame pointer leaving the stack bounds stops the walk, no read. */
	stack[16] = 0x10;
	d = unwind_stack(&r, pcs, 8, UNWIND_FLAG_FP_ONLY, &end);
	CHECK(d == 2 && end == UNWIND_END_BROKEN);
	stack[16] = (uint64_t)(uintptr_t)&stack[60]; /* ra slot beyond the bounds */
	stack[60] = (uint64_t)(uintptr_t)&stack[63];
	stack[61] = ra1;
	stack[63] = ~0ull;
	d = unwind_stack(&r, pcs, 8, UNWIND_FLAG_FP_ONLY, &end);
	CHECK(end == UNWIND_END_BROKEN && d <= 4);
	/* A return address outside every executable mapping is not a frame. */
	stack[16] = 0;
	stack[17] = 0x1234;
	d = unwind_stack(&r, pcs, 8, UNWIND_FLAG_FP_ONLY, &end);
	CHECK(d == 2 && end == UNWIND_END_BROKEN);
	/* A loop in the chain (fp not increasing) stops. */
	stack[16] = (uint64_t)(uintptr_t)&stack[8];
	stack[17] = ra2;
	d = unwind_stack(&r, pcs, 8, UNWIND_FLAG_FP_ONLY, &end);
	CHECK(d <= 3 && end == UNWIND_END_BROKEN);
}

#if defined(__x86_64__)
/* GCC's epilogue shape: after `leave` the rule still says rbp is saved at
 * CFA-16, a slot already popped (below sp).  The caller keeps its frame in
 * rbp (CFA = rbp + 16), so only the restored register leads further. */
#define RBP_FRAME_PROLOGUE \
	"push %rbp\n.cfi_def_cfa_offset 16\n.cfi_offset %rbp, -16\n" \
	"mov %rsp, %rbp\n.cfi_def_cfa_register %rbp\n"
__asm__(".text\n"
	".globl epilogue_callee, epilogue_callee_ret, epilogue_caller_ret\n"
	".hidden epilogue_callee, epilogue_callee_ret, epilogue_caller_ret\n"
	"epilogue_callee:\n"
	".cfi_startproc\n"
	RBP_FRAME_PROLOGUE
	"leave\n"
	".cfi_def_cfa %rsp, 8\n"
	"epilogue_callee_ret:\n"
	"ret\n"
	".cfi_endproc\n"
	"epilogue_caller:\n"
	".cfi_startproc\n"
	RBP_FRAME_PROLOGUE
	"call epilogue_callee\n"
	"epilogue_caller_ret:\n"
	"leave\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n");
extern const char epilogue_callee_ret[], epilogue_caller_ret[];

/* Interrupted at the callee's `ret`: the walk goes on through the caller's
 * rbp frame to its return address, never reading the popped slot. */
static void test_cfi_epilogue_after_pop(void)
{
	uint64_t stack[64];
	memset(stack, 0, sizeof(stack));
	uint64_t ra2 = code_address_b();
	stack[7] = 0xbad0bad0bad0ull; /* the popped slot: stale, must not be used */
	stack[8] = (uint64_t)(uintptr_t)epilogue_caller_ret;
	stack[16] = 0; /* caller's frame record: saved rbp, return address */
	stack[17] = ra2;
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	r.pc = (uint64_t)(uintptr_t)epilogue_callee_ret;
	r.sp = (uint64_t)(uintptr_t)&stack[8];
	r.fp = (uint64_t)(uintptr_t)&stack[16];
	r.stack_lo = (uint64_t)(uintptr_t)&stack[0];
	r.stack_hi = (uint64_t)(uintptr_t)&stack[64];
	uint64_t pcs[8];
	enum unwind_end end;
	uint32_t d = unwind_stack(&r, pcs, 8, 0, &end);
	CHECK(d >= 3);
	CHECK(d >= 1 && pcs[0] == (uint64_t)(uintptr_t)epilogue_callee_ret);
	CHECK(d >= 2 && pcs[1] == (uint64_t)(uintptr_t)epilogue_caller_ret - 1);
	CHECK(d >= 3 && pcs[2] == ra2 - 1);
}
#endif

struct walk {
	uint64_t pcs[64];
	uint32_t depth;
	enum unwind_end end;
};

__attribute__((noinline)) static void walk_here(struct walk *w, uint32_t flags)
{
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(r.pc), "=r"(r.sp), "=r"(r.fp));
	w->depth = unwind_stack(&r, w->pcs, 64, flags, &w->end);
}

/* The same stack read directly and through process_vm_readv (the mode for
 * another thread's stack) gives the same frames, ending at _start. */
static void test_remote_reads_match_local(void)
{
	struct walk walks[2];
	for (int i = 0; i < 2; i++)
		walk_here(&walks[i], i == 0 ? 0 : UNWIND_FLAG_REMOTE);
	const struct walk local = walks[0], remote = walks[1];
	CHECK(local.depth >= 4 && local.depth == remote.depth);
	CHECK(local.end == UNWIND_END_OUTERMOST && remote.end == local.end);
	/* Frame 1 is the call site, which the compiler may duplicate. */
	for (uint32_t i = 2; i < local.depth && i < remote.depth; i++)
		CHECK(local.pcs[i] == remote.pcs[i]);
	struct sw_frame_info fi;
	memset(&fi, 0, sizeof(fi));
	CHECK(symbols_resolve(NULL, local.pcs[local.depth - 1], &fi) && fi.function &&
	      strcmp(fi.function, "_start") == 0);
}

/* A stack unwound again from the same place takes its frames' rows from the
 * last unwind (the same pc at the same stack pointer): the same pcs, and no
 * rule looked up or row-cache probe for them; a frame-pointer-only unwind
 * neither uses nor replaces them. */
static void test_rows_from_last_stack(void)
{
	struct walk w[3];
	struct unwind_counts c[4];
	/* One call site for all three (a trip count the compiler cannot unroll). */
	static volatile int rounds = 3;
	for (int i = 0; i < rounds && i < 3; i++) {
		unwind_counts_get(&c[i]);
		walk_here(&w[i], i == 2 ? UNWIND_FLAG_FP_ONLY : 0);
	}
	unwind_counts_get(&c[3]);
	CHECK(w[0].depth >= 4 && w[1].depth == w[0].depth && w[1].end == w[0].end);
	for (uint32_t i = 0; i < w[0].depth && i < w[1].depth; i++)
		CHECK(w[0].pcs[i] == w[1].pcs[i]);
	uint64_t reused = c[2].rows_from_last_stack - c[1].rows_from_last_stack;
	printf("  second unwind: %llu of %u rows from the last stack\n", (unsigned long long)reused,
	       w[1].depth);
	CHECK(reused == w[1].depth);
	CHECK(c[2].rule_lookups == c[1].rule_lookups);
	CHECK(c[3].rows_from_last_stack == c[2].rows_from_last_stack);
	/* The rows are still the CFI unwind's after the frame-pointer one (all
	 * but the call site, which this call changes). */
	walk_here(&w[2], 0);
	struct unwind_counts last;
	unwind_counts_get(&last);
	CHECK(w[2].depth == w[0].depth &&
	      last.rows_from_last_stack - c[3].rows_from_last_stack == w[2].depth - 1u);
}

/* ---- rows shared by a fork family ---- */

/* What a child reports of its unwind from family_walk. */
struct family_report {
	uint64_t lookups; /* rules looked up in .eh_frame during the unwind */
	struct walk w;
};

static volatile int family_sink;

__attribute__((noinline)) static void family_walk(struct walk *w)
{
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	ARCH_HERE(r.pc, r.sp, r.fp);
	w->depth = unwind_stack(&r, w->pcs, 64, 0, &w->end);
	family_sink++; /* no tail call: this frame stays */
}

__attribute__((noinline)) static void family_caller(struct walk *w)
{
	family_walk(w);
	family_sink++;
}

/* In a child: unwinds from a place this process never unwound from, and
 * reports what it took through fd. */
static bool family_child(struct family_report *out)
{
	int fds[2];
	if (pipe(fds) != 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		struct family_report rep;
		struct unwind_counts a, b;
		memset(&rep, 0, sizeof(rep));
		unwind_counts_get(&a);
		family_caller(&rep.w);
		unwind_counts_get(&b);
		rep.lookups = b.rule_lookups - a.rule_lookups;
		_exit(write(fds[1], &rep, sizeof(rep)) == (ssize_t)sizeof(rep) ? 0 : 1);
	}
	close(fds[1]);
	ssize_t got = pid > 0 ? read(fds[0], out, sizeof(*out)) : -1;
	close(fds[0]);
	int status = 0;
	if (pid > 0)
		(void)waitpid(pid, &status, 0);
	return got == (ssize_t)sizeof(*out) && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Processes forked from one that profiles share its row cache: a rule the
 * first child looked up serves the second, which looks up none for the
 * same frames (a prefork server's workers run the same code). */
static void test_rows_shared_by_fork_family(void)
{
	struct family_report rep[2];
	/* One call site for both (a trip count the compiler cannot unroll). */
	static volatile int children = 2;
	for (int i = 0; i < children && i < 2; i++)
		CHECK(family_child(&rep[i]));
	const struct family_report first = rep[0], second = rep[1];
	printf("  rules looked up: first child %llu, second child %llu, %u frames\n",
	       (unsigned long long)first.lookups, (unsigned long long)second.lookups,
	       first.w.depth);
	CHECK(first.lookups >= 2);
	CHECK(second.lookups == 0);
	CHECK(first.w.depth >= 4 && second.w.depth == first.w.depth && second.w.end == first.w.end);
	for (uint32_t i = 0; i < first.w.depth && i < second.w.depth; i++)
		CHECK(first.w.pcs[i] == second.w.pcs[i]);
}

/* ---- a row serves the span it holds for ---- */

static volatile int span_sink;

/* Unwinds from here, and again from a nearby address of the same 64 bytes
 * of code (a CPU sample landing a few bytes further in the same body). */
__attribute__((noinline)) static void span_walks(struct walk w[2], struct unwind_counts c[3])
{
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	ARCH_HERE(r.pc, r.sp, r.fp);
	unwind_counts_get(&c[0]);
	w[0].depth = unwind_stack(&r, w[0].pcs, 64, 0, &w[0].end);
	unwind_counts_get(&c[1]);
	r.pc = (r.pc + 1) >> 6 == r.pc >> 6 ? r.pc + 1 : r.pc - 1;
	w[1].depth = unwind_stack(&r, w[1].pcs, 64, 0, &w[1].end);
	unwind_counts_get(&c[2]);
	span_sink++;
}

/* The second unwind finds the first one's row for the leaf in the row
 * cache, though its pc is another address: no rule looked up. */
static void test_row_span_serves_nearby_pc(void)
{
	struct walk w[2];
	struct unwind_counts c[3];
	span_walks(w, c);
	printf("  rules looked up: %llu, then %llu from a pc 1 byte away\n",
	       (unsigned long long)(c[1].rule_lookups - c[0].rule_lookups),
	       (unsigned long long)(c[2].rule_lookups - c[1].rule_lookups));
	CHECK(c[1].rule_lookups - c[0].rule_lookups >= 1);
	CHECK(c[2].rule_lookups == c[1].rule_lookups);
	CHECK(w[0].depth >= 4 && w[1].depth == w[0].depth && w[1].end == w[0].end);
	for (uint32_t i = 1; i < w[0].depth && i < w[1].depth; i++)
		CHECK(w[0].pcs[i] == w[1].pcs[i]);
}

/* ---- the stack memo ---- */

static volatile int memo_sink;
static uint64_t memo_sp; /* memo_walk's stack pointer, last call */

/* Unwinds from here, with and without the memo, on this thread's stack. */
__attribute__((noinline)) static void memo_walk(struct walk *memo_w, struct walk *plain_w)
{
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	ARCH_HERE(r.pc, r.sp, r.fp);
	memo_sp = r.sp;
	uint64_t lo = 0, hi = 0;
	if (unwind_stack_bounds(r.sp, &lo, &hi)) {
		r.stack_lo = lo;
		r.stack_hi = hi;
	}
	memo_w->depth = unwind_stack_memo(&r, memo_w->pcs, 64, 0, &memo_w->end);
	plain_w->depth = unwind_stack(&r, plain_w->pcs, 64, 0, &plain_w->end);
}

/* Two callers with frames of one size: memo_walk starts at the same pc and
 * the same depth below the stack's top from either, with a different return
 * address on the stack. */
__attribute__((noinline)) static void memo_via_a(struct walk *m, struct walk *p)
{
	memo_walk(m, p);
	memo_sink = 1;
}

__attribute__((noinline)) static void memo_via_b(struct walk *m, struct walk *p)
{
	memo_walk(m, p);
	memo_sink = 2;
}

static bool walks_equal(const struct walk *a, const struct walk *b)
{
	if (a->depth != b->depth || a->end != b->end)
		return false;
	for (uint32_t i = 0; i < a->depth; i++)
		if (a->pcs[i] != b->pcs[i])
			return false;
	return true;
}

/* The memo answers a place seen before with the pcs unwinding gives, and
 * only while the stack words that walk read still hold the same values: a
 * different return address at the same place is unwound afresh. */
static void test_stack_memo(void)
{
	struct walk m, p;
	struct unwind_counts before, after;
	bool same = true;
	unwind_counts_get(&before);
	static volatile int rounds = 4;
	for (int i = 0; i < rounds; i++) {
		memo_via_a(&m, &p);
		same = same && walks_equal(&m, &p);
	}
	unwind_counts_get(&after);
	uint64_t hits = after.stacks_from_memo - before.stacks_from_memo;
	printf("  %llu of %d unwinds from one place answered by the memo\n", (unsigned long long)hits,
	       rounds);
	CHECK(same && m.depth >= 4);
	/* Seen once, kept the second time, answered from then on. */
	CHECK(hits == (uint64_t)rounds - 2u);
	uint64_t a_caller = m.pcs[1], a_sp = memo_sp;
	memo_via_b(&m, &p);
	unwind_counts_get(&before);
	/* The same place (else this would not test the words' check). */
	CHECK(memo_sp == a_sp);
	CHECK(walks_equal(&m, &p) && m.pcs[1] != a_caller);
	CHECK(before.stacks_from_memo == after.stacks_from_memo);
	/* Frame-pointer-only and remote unwinds never use it, bounds known. */
	struct unwind_regs r;
	memset(&r, 0, sizeof(r));
	ARCH_HERE(r.pc, r.sp, r.fp);
	uint64_t lo = 0, hi = 0;
	CHECK(unwind_stack_bounds(r.sp, &lo, &hi));
	r.stack_lo = lo;
	r.stack_hi = hi;
	for (int i = 0; i < 3; i++) {
		(void)unwind_stack_memo(&r, m.pcs, 64, UNWIND_FLAG_FP_ONLY, &m.end);
		(void)unwind_stack_memo(&r, m.pcs, 64, UNWIND_FLAG_REMOTE, &m.end);
	}
	unwind_counts_get(&after);
	CHECK(after.stacks_from_memo == before.stacks_from_memo);
}

static void test_warm_cost(void)
{
	struct walk w;
	walk_here(&w, 0);
	struct timespec a, b;
	const int rounds = 20000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < rounds; i++)
		walk_here(&w, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / rounds;
	printf("  warm CFI unwind: %.0f ns for %u frames (%.0f ns/frame)\n", ns, w.depth, ns / w.depth);
	CHECK(w.depth >= 4);
}

/* A hook as the collectors' are built (frame pointer kept), and two callers:
 * the capture keeps the stack from the hook's caller on, whichever way it
 * reaches it (our frame-pointer chain, or unwinding our own frames). */
struct captured {
	uint64_t buf[64];
	uint32_t first, depth;
};

__attribute__((noinline, optimize("no-omit-frame-pointer"))) static void
fake_hook(struct captured *c, uint32_t cap)
{
	c->first = sample_capture_caller((uintptr_t)__builtin_return_address(0), 0, 0, c->buf, cap,
					 &c->depth);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) static void hook_caller(struct captured *c, uint32_t cap)
{
	fake_hook(c, cap);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void hook_grand_caller(struct captured *c, uint32_t cap)
{
	hook_caller(c, cap);
	__asm__ volatile("" ::: "memory");
}

static const char *frame_name(uint64_t pc)
{
	struct sw_frame_info fi;
	memset(&fi, 0, sizeof(fi));
	return symbols_resolve(NULL, pc, &fi) && fi.function ? fi.function : "?";
}

static void test_capture_starts_at_hook_caller(void)
{
	struct captured c;
	memset(&c, 0, sizeof(c));
	hook_grand_caller(&c, 64);
	CHECK(c.depth >= 3);
	if (c.depth < 3)
		return;
	const uint64_t *pcs = c.buf + c.first;
	CHECK(strcmp(frame_name(pcs[0]), "hook_caller") == 0);
	CHECK(strcmp(frame_name(pcs[1]), "hook_grand_caller") == 0);
	CHECK(strcmp(frame_name(pcs[2]), "test_capture_starts_at_hook_caller") == 0);
	/* The cap keeps SAMPLE_OWN_FRAMES for our frames; a short one truncates. */
	memset(&c, 0, sizeof(c));
	hook_grand_caller(&c, SAMPLE_OWN_FRAMES + 2u);
	CHECK(c.depth >= 1 && c.depth <= SAMPLE_OWN_FRAMES + 2u);
	CHECK(c.depth >= 1 && strcmp(frame_name(c.buf[c.first]), "hook_caller") == 0);
	CHECK(c.depth >= 1 && c.buf[c.first + c.depth - 1] == SW_PC_TRUNCATED);
}

int main(void)
{
	if (!symbols_refresh()) {
		printf("FAIL symbols_refresh\n");
		return 1;
	}
	RUN(test_cfi_matches_readelf_libc);
	RUN(test_cfi_matches_readelf_self);
	RUN(test_index_matches_table);
	RUN(test_fp_chain_on_fake_stack);
#if defined(__x86_64__)
	RUN(test_cfi_epilogue_after_pop);
#endif
	RUN(test_remote_reads_match_local);
	RUN(test_rows_from_last_stack);
	RUN(test_rows_shared_by_fork_family);
	RUN(test_row_span_serves_nearby_pc);
	RUN(test_stack_memo);
	RUN(test_warm_cost);
	RUN(test_capture_starts_at_hook_caller);
	return CHECK_DONE();
}
