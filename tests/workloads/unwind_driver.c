/* Samples known call chains with SIGPROF (setitimer), unwinds each sample in
 * the signal handler with unwind_stack(), symbolizes afterwards with
 * symbols_resolve(), and checks the result.  Prints "PASS/FAIL <label> <check>"
 * lines and "BENCH" lines with the unwind cost.
 *
 * Usage: unwind_driver LABEL MODE [--fp-only] [--libc-cfi]
 *   MODE: chain | thread | recursion | signal | plt | vdso
 *   --fp-only   unwind with frame pointers only (UNWIND_FLAG_FP_ONLY)
 *   --libc-cfi  the C library has complete .eh_frame (glibc): also require
 *               every stack to end at the outermost frame
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "symbols/elf.h"
#include "symbols/symbols.h"
#include "unwind/unwind.h"
#include "unwind_chain.h"

#define MAX_SAMPLES 1000
#define MAX_FRAMES 128
#define RECURSION_MAX_FRAMES 64

struct sample {
	uint64_t pcs[MAX_FRAMES];
	uint32_t depth;
	enum unwind_end end;
	uint64_t ns;
};

static struct sample samples[MAX_SAMPLES];
static atomic_int nsamples;
static atomic_int target_samples;
static uint32_t unwind_flags;
static uint32_t max_frames = MAX_FRAMES;
static const char *label;
static int failures;
static volatile unsigned long sink;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Stack bounds of the sampled worker thread, as the profiler's thread
 * registration would publish them. */
static __thread uint64_t thread_stack_lo, thread_stack_hi;

static void register_thread_stack(void)
{
	uint64_t lo, hi;
	if (symbols_stack_bounds_of((uint64_t)(uintptr_t)&lo, &lo, &hi)) {
		thread_stack_lo = lo;
		thread_stack_hi = hi;
	}
}

static void prof_handler(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	const ucontext_t *uc = ucv;
	int i = atomic_fetch_add(&nsamples, 1);
	if (i >= MAX_SAMPLES)
		return;
	struct unwind_regs regs;
	memset(&regs, 0, sizeof(regs));
	regs.pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	regs.sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	regs.fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
	regs.stack_lo = thread_stack_lo;
	regs.stack_hi = thread_stack_hi;
	struct sample *s = &samples[i];
	uint64_t t0 = now_ns();
	s->depth = unwind_stack(&regs, s->pcs, max_frames, unwind_flags, &s->end);
	s->ns = now_ns() - t0;
}

static int samples_taken(void)
{
	int n = atomic_load(&nsamples);
	return n < MAX_SAMPLES ? n : MAX_SAMPLES;
}

static int keep_going(void) { return atomic_load(&nsamples) < atomic_load(&target_samples); }

static void start_sampling(int count)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prof_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	/* A SIGALRM taken inside this handler would spin in handler_leaf with
	 * SIGPROF blocked, waiting for samples that never come. */
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaction(SIGPROF, &sa, NULL);
	atomic_store(&nsamples, 0);
	atomic_store(&target_samples, count);
	struct itimerval it = {{0, 1000}, {0, 1000}};
	setitimer(ITIMER_PROF, &it, NULL);
}

static void stop_sampling(void)
{
	struct itimerval it;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);
}

static void check(int ok, const char *what, const char *detail)
{
	printf("%s %s %s%s%s\n", ok ? "PASS" : "FAIL", label, what, detail[0] ? " " : "", detail);
	if (!ok)
		failures++;
}

/* Name of the function containing pc ("" if none). */
static const char *name_of(uint64_t pc)
{
	struct sw_frame_info fi;
	memset(&fi, 0, sizeof(fi));
	if (!symbols_resolve(NULL, pc, &fi) || fi.function == NULL)
		return "";
	return fi.function;
}

static const char *name_of_fn(const void *fn) { return name_of((uint64_t)(uintptr_t)fn); }

/* Index of the first frame named `name` at or after `from`, or -1. */
static int find_frame(const struct sample *s, uint32_t from, const char *name)
{
	for (uint32_t i = from; i < s->depth; i++)
		if (strcmp(name_of(s->pcs[i]), name) == 0)
			return (int)i;
	return -1;
}

/* True if names[0..n) appear as consecutive frames, starting at the first
 * frame named names[0]. */
static int has_consecutive(const struct sample *s, const char *const *names, int n)
{
	int k = find_frame(s, 0, names[0]);
	if (k < 0)
		return 0;
	for (int j = 1; j < n; j++)
		if ((uint32_t)(k + j) >= s->depth || strcmp(name_of(s->pcs[k + j]), names[j]) != 0)
			return 0;
	return 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report_cost(int n)
{
	static uint64_t ns[MAX_SAMPLES];
	uint64_t frames = 0;
	for (int i = 0; i < n; i++) {
		ns[i] = samples[i].ns;
		frames += samples[i].depth;
	}
	qsort(ns, (size_t)n, sizeof(ns[0]), cmp_u64);
	printf("BENCH unwind_%s_%s: ns_per_sample = %llu (median of %d samples, %.1f frames on average)\n",
	       unwind_flags & UNWIND_FLAG_FP_ONLY ? "fp" : "cfi", label,
	       (unsigned long long)ns[n / 2], n, n ? (double)frames / n : 0.0);
}

static void percent(char *buf, size_t cap, int good, int total)
{
	snprintf(buf, cap, "%d/%d (%.1f%%)", good, total, total ? 100.0 * good / total : 0.0);
}

/* Checks shared by the modes: `expect` are consecutive frames every sample
 * whose leaf-side frames include expect[0] must show; `entry` must be in
 * every sample; with --libc-cfi every sample must end at the outermost frame. */
static void check_samples(const char *mode, const char *const *expect, int nexpect,
			  const char *entry, int libc_cfi)
{
	int n = samples_taken();
	int with_first = 0, chain_ok = 0, entry_ok = 0, outermost = 0;
	char what[128], detail[128];
	for (int i = 0; i < n; i++) {
		const struct sample *s = &samples[i];
		if (find_frame(s, 0, expect[0]) >= 0) {
			with_first++;
			chain_ok += has_consecutive(s, expect, nexpect);
		}
		entry_ok += find_frame(s, 0, entry) >= 0;
		outermost += s->end == UNWIND_END_OUTERMOST;
	}
	snprintf(what, sizeof(what), "%s-samples", mode);
	snprintf(detail, sizeof(detail), "%d samples, %d in %s", n, with_first, expect[0]);
	check(n >= 100 && with_first >= n / 2, what, detail);
	snprintf(what, sizeof(what), "%s-chain-in-order", mode);
	percent(detail, sizeof(detail), chain_ok, with_first);
	check(with_first > 0 && chain_ok * 100 >= with_first * 99, what, detail);
	snprintf(what, sizeof(what), "%s-reaches-%s", mode, entry);
	percent(detail, sizeof(detail), entry_ok, n);
	check(n > 0 && entry_ok * 100 >= n * 99, what, detail);
	if (libc_cfi) {
		snprintf(what, sizeof(what), "%s-ends-outermost", mode);
		percent(detail, sizeof(detail), outermost, n);
		check(n > 0 && outermost * 100 >= n * 99, what, detail);
	}
	report_cost(n);
}

/* ---- modes ---- */

static const void *chain_fns[4];

__attribute__((noinline)) static int run_chain(void)
{
	int r = chain_run(keep_going);
	sink += 1;
	return r;
}

__attribute__((noinline)) static void mode_chain(int libc_cfi)
{
	start_sampling(300);
	run_chain();
	stop_sampling();
	const char *expect[8] = {name_of_fn(chain_fns[0]), name_of_fn(chain_fns[1]),
				 name_of_fn(chain_fns[2]), name_of_fn(chain_fns[3]),
				 name_of_fn((const void *)chain_run), name_of_fn((const void *)run_chain),
				 name_of_fn((const void *)mode_chain), "main"};
	check_samples("chain", expect, 8, "main", libc_cfi);
}

__attribute__((noinline)) static void *thread_entry(void *arg)
{
	(void)arg;
	register_thread_stack();
	int r = chain_run(keep_going);
	sink += 1;
	return (void *)(intptr_t)r;
}

__attribute__((noinline)) static void mode_thread(int libc_cfi)
{
	pthread_t t;
	start_sampling(300);
	if (pthread_create(&t, NULL, thread_entry, NULL) != 0) {
		check(0, "thread-create", "");
		return;
	}
	pthread_join(t, NULL);
	stop_sampling();
	const char *entry = name_of_fn((const void *)thread_entry);
	const char *expect[6] = {name_of_fn(chain_fns[0]), name_of_fn(chain_fns[1]),
				 name_of_fn(chain_fns[2]), name_of_fn(chain_fns[3]),
				 name_of_fn((const void *)chain_run), entry};
	check_samples("thread", expect, 6, entry, libc_cfi);
}

__attribute__((noinline)) static void mode_recursion(void)
{
	max_frames = RECURSION_MAX_FRAMES;
	start_sampling(150);
	chain_recurse(2000, keep_going);
	stop_sampling();
	int n = samples_taken();
	int in_leaf = 0, capped = 0, all_recurse = 0;
	const char *leaf = name_of_fn(chain_fns[0]);
	const char *rec = name_of_fn(chain_recurse_function());
	for (int i = 0; i < n; i++) {
		const struct sample *s = &samples[i];
		int k = find_frame(s, 0, leaf);
		if (k < 0)
			continue;
		in_leaf++;
		capped += s->depth == RECURSION_MAX_FRAMES && s->end == UNWIND_END_TRUNCATED;
		int ok = 1;
		for (uint32_t j = (uint32_t)k + 1; j < s->depth; j++)
			ok &= strcmp(name_of(s->pcs[j]), rec) == 0;
		all_recurse += ok;
	}
	char detail[128];
	percent(detail, sizeof(detail), capped, in_leaf);
	check(in_leaf >= 100 && capped == in_leaf, "recursion-capped-and-truncated", detail);
	percent(detail, sizeof(detail), all_recurse, in_leaf);
	check(in_leaf > 0 && all_recurse == in_leaf, "recursion-frames-are-recurse", detail);
	report_cost(n);
}

static atomic_int in_alarm_handler;

__attribute__((noinline)) static void handler_leaf(void)
{
	while (keep_going())
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
}

__attribute__((noinline)) static void alarm_handler(int sig)
{
	(void)sig;
	atomic_store(&in_alarm_handler, 1);
	handler_leaf();
	sink += 1;
}

__attribute__((noinline)) static int run_signal_chain(void)
{
	int r = chain_run(keep_going);
	sink += 1;
	return r;
}

__attribute__((noinline)) static void mode_signal(int libc_cfi)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = alarm_handler;
	sigaction(SIGALRM, &sa, NULL);
	start_sampling(300);
	struct itimerval it = {{0, 0}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	run_signal_chain();
	stop_sampling();
	const char *expect_tail[7] = {name_of_fn(chain_fns[1]), name_of_fn(chain_fns[2]),
				      name_of_fn(chain_fns[3]), name_of_fn((const void *)chain_run),
				      name_of_fn((const void *)run_signal_chain),
				      name_of_fn((const void *)mode_signal), "main"};
	const char *hl = name_of_fn((const void *)handler_leaf);
	const char *ah = name_of_fn((const void *)alarm_handler);
	int n = samples_taken();
	int in_handler = 0, crossed = 0;
	for (int i = 0; i < n; i++) {
		const struct sample *s = &samples[i];
		int k = find_frame(s, 0, hl);
		if (k < 0)
			continue;
		in_handler++;
		/* handler_leaf, alarm_handler, the trampoline, then the interrupted
		 * chain: c, b, a, chain_run, run_signal_chain, mode_signal, main
		 * in that order. */
		int ok = (uint32_t)k + 1 < s->depth && strcmp(name_of(s->pcs[k + 1]), ah) == 0;
		int at = k + 2;
		for (int j = 0; ok && j < 7; j++) {
			at = find_frame(s, (uint32_t)at, expect_tail[j]);
			ok = at >= 0;
			at++;
		}
		crossed += ok;
	}
	char detail[128];
	snprintf(detail, sizeof(detail), "%d samples in the handler", in_handler);
	check(atomic_load(&in_alarm_handler) && in_handler >= 100, "signal-samples-in-handler", detail);
	percent(detail, sizeof(detail), crossed, in_handler);
	check(in_handler > 0 && crossed * 100 >= in_handler * 99, "signal-frame-crossed", detail);
	if (libc_cfi) {
		int outermost = 0;
		for (int i = 0; i < n; i++)
			outermost += samples[i].end == UNWIND_END_OUTERMOST;
		percent(detail, sizeof(detail), outermost, n);
		check(n > 0 && outermost * 100 >= n * 99, "signal-ends-outermost", detail);
	}
	report_cost(n);
}

__attribute__((noinline)) static int run_plt(void)
{
	int r = shlib_spin(keep_going);
	sink += 1;
	return r;
}

/* Runtime address of this program's lazy-binding .plt, or 0. */
int main(int argc, char **argv);

static uint64_t own_plt(void)
{
	static uint8_t buf[8 << 20];
	FILE *f = fopen("/proc/self/exe", "rb");
	if (f == NULL)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct elf_image img;
	struct elf_section plt;
	struct elf_symbol_iter it;
	struct elf_symbol sym;
	if (!elf_open(&img, buf, n) || !elf_section_by_name(&img, ".plt", &plt) || plt.size < 32 ||
	    !elf_symbols_begin(&img, 2 /* SHT_SYMTAB */, &it))
		return 0;
	while (elf_symbols_next(&it, &sym))
		if (strcmp(sym.name, "main") == 0)
			return plt.addr + ((uint64_t)(uintptr_t)&main - sym.value);
	return 0;
}

__attribute__((noinline)) static void mode_plt(int libc_cfi)
{
	start_sampling(300);
	run_plt();
	stop_sampling();
	const char *expect[5] = {name_of_fn(shlib_leaf_function()), "shlib_spin",
				 name_of_fn((const void *)run_plt), name_of_fn((const void *)mode_plt),
				 "main"};
	check_samples("plt", expect, 5, "main", libc_cfi);

	/* A pc inside a PLT stub: the CFA is rsp + 8 at the stub's first
	 * instruction and rsp + 16 after the lazy stub's push (pc & 15 >= 11). */
	uint64_t plt = own_plt();
	uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uint64_t fake[8] = {ra, ra, 0, 0, 0, 0, 0, 0};
	uint64_t pcs[4];
	enum unwind_end end;
	struct unwind_regs regs;
	memset(&regs, 0, sizeof(regs));
	regs.pc = plt + 16;
	regs.sp = (uint64_t)(uintptr_t)&fake[0];
	uint32_t d1 = unwind_stack(&regs, pcs, 2, 0, &end);
	int ok1 = d1 == 2 && pcs[1] == ra - 1;
	fake[0] = 7; /* the pushed relocation index */
	regs.pc = plt + 16 + 11;
	uint32_t d2 = unwind_stack(&regs, pcs, 2, 0, &end);
	int ok2 = d2 == 2 && pcs[1] == ra - 1;
	char detail[128];
	snprintf(detail, sizeof(detail), "plt=%#llx depths %u %u", (unsigned long long)plt, d1, d2);
	check(plt != 0 && ok1 && ok2, "plt-stub-cfa", detail);
}

static atomic_int vdso_done;

__attribute__((noinline)) static void vdso_loop(void)
{
	struct timespec ts;
	while (keep_going()) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (unsigned long)ts.tv_nsec;
	}
}

__attribute__((noinline)) static void *vdso_thread(void *arg)
{
	(void)arg;
	register_thread_stack();
	vdso_loop();
	atomic_store(&vdso_done, 1);
	return NULL;
}

__attribute__((noinline)) static void mode_vdso(int libc_cfi)
{
	pthread_t t;
	start_sampling(400);
	if (pthread_create(&t, NULL, vdso_thread, NULL) != 0) {
		check(0, "vdso-thread-create", "");
		return;
	}
	pthread_join(t, NULL);
	stop_sampling();
	int n = samples_taken();
	const char *entry = name_of_fn((const void *)vdso_thread);
	int in_vdso = 0, named = 0, reached = 0, outermost = 0;
	for (int i = 0; i < n; i++) {
		const struct sample *s = &samples[i];
		struct sw_frame_info fi;
		memset(&fi, 0, sizeof(fi));
		if (!symbols_resolve(NULL, s->pcs[0], &fi) || strcmp(fi.map_path, "[vdso]") != 0)
			continue;
		in_vdso++;
		named += fi.function != NULL;
		reached += find_frame(s, 0, entry) >= 0;
		outermost += s->end == UNWIND_END_OUTERMOST;
	}
	char detail[128];
	snprintf(detail, sizeof(detail), "%d of %d samples in [vdso], %d symbolized", in_vdso, n, named);
	check(in_vdso >= 20 && named == in_vdso, "vdso-leaf-symbolized", detail);
	/* Through the C library's clock_gettime: needs its CFI (glibc) or frame
	 * pointers in our frames (musl's libc has no .eh_frame). */
	if (libc_cfi || (unwind_flags & UNWIND_FLAG_FP_ONLY) == 0) {
		percent(detail, sizeof(detail), reached, in_vdso);
		if (libc_cfi) {
			check(in_vdso > 0 && reached * 100 >= in_vdso * 99, "vdso-reaches-thread-entry",
			      detail);
			percent(detail, sizeof(detail), outermost, in_vdso);
			check(in_vdso > 0 && outermost * 100 >= in_vdso * 99, "vdso-ends-outermost", detail);
		} else {
			printf("INFO %s vdso-reaches-thread-entry %s (musl libc has no CFI)\n", label, detail);
		}
	}
	report_cost(n);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s LABEL MODE [--fp-only] [--libc-cfi]\n", argv[0]);
		return 2;
	}
	label = argv[1];
	const char *mode = argv[2];
	int libc_cfi = 0;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "--fp-only") == 0)
			unwind_flags |= UNWIND_FLAG_FP_ONLY;
		else if (strcmp(argv[i], "--libc-cfi") == 0)
			libc_cfi = 1;
	}
	memset(samples, 0, sizeof(samples)); /* no page faults inside the timed unwinds */
	chain_functions(chain_fns);
	check(symbols_refresh(), "symbols-refresh", "");
	if (strcmp(mode, "chain") == 0)
		mode_chain(libc_cfi);
	else if (strcmp(mode, "thread") == 0)
		mode_thread(libc_cfi);
	else if (strcmp(mode, "recursion") == 0)
		mode_recursion();
	else if (strcmp(mode, "signal") == 0)
		mode_signal(libc_cfi);
	else if (strcmp(mode, "plt") == 0)
		mode_plt(libc_cfi);
	else if (strcmp(mode, "vdso") == 0)
		mode_vdso(libc_cfi);
	else
		check(0, "known-mode", mode);
	return failures ? 1 : 0;
}
