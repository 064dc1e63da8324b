/* The allocation sampler and live-heap table (collect/alloc.h), driven
 * directly: sampling math checked against simulated truth, the per-thread
 * table, the live table and its snapshot read back through the profile API. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collect/alloc.h"
#include "collect/sample.h"
#include "unit/check.h"

#define RATE 65536u

static struct sw_config test_cfg(uint32_t kinds)
{
	struct sw_config c;
	memset(&c, 0, sizeof(c));
	c.kinds = kinds;
	c.alloc_sample_bytes = RATE;
	c.max_frames = 64;
	return c;
}

static void weight_matches_formula(void)
{
	CHECK(sample_weight(0, RATE) == 0.0);
	const uint64_t sizes[] = { 1, 16, 100, 4096, RATE / 2, RATE, 3 * RATE, 100 * RATE };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double want = 1.0 / (-expm1(-(double)sizes[i] / RATE));
		double got = sample_weight(sizes[i], RATE);
		CHECK(fabs(got - want) <= 1e-9 * want);
	}
	CHECK(sample_weight(1000 * (uint64_t)RATE, RATE) == 1.0);
}

static void countdown_draws_are_exponential(void)
{
	struct rt_rng rng = { { 12345, 67890 } };
	double sum = 0, sum_sq = 0;
	const int n = 200000;
	int64_t min = INT64_MAX;
	for (int i = 0; i < n; i++) {
		int64_t c = alloc_draw_countdown(&rng, RATE);
		min = c < min ? c : min;
		sum += (double)c;
		sum_sq += (double)c * (double)c;
	}
	double mean = sum / n;
	double sd = sqrt(sum_sq / n - mean * mean);
	CHECK(min >= 1);
	CHECK(fabs(mean - RATE) < 0.01 * RATE); /* standard error 0.22% */
	CHECK(fabs(sd - RATE) < 0.02 * RATE);   /* exponential: sd == mean */
}

static void random_rounding_is_unbiased(void)
{
	struct rt_rng rng = { { 1, 2 } };
	const double xs[] = { 0.25, 1.5, 2.75, 1234.125 };
	for (size_t k = 0; k < sizeof(xs) / sizeof(xs[0]); k++) {
		double sum = 0;
		const int n = 100000;
		for (int i = 0; i < n; i++) {
			int64_t r = sample_round_random(&rng, xs[k]);
			CHECK(r == (int64_t)floor(xs[k]) || r == (int64_t)ceil(xs[k]));
			sum += (double)r;
		}
		CHECK(fabs(sum / n - xs[k]) < 0.01);
	}
	CHECK(sample_round_random(&rng, 0.0) == 0);
	CHECK(sample_round_random(&rng, 7.0) == 7);
}

/* Simulates a thread allocating a mix of size classes through the same
 * countdown the hooks use; the weighted samples must estimate each class's
 * true count and bytes. */
static void sampling_is_unbiased_per_size_class(void)
{
	struct alloc_thread t;
	memset(&t, 0, sizeof(t));
	t.rng.s[0] = 0x1234567;
	t.rng.s[1] = 0x89abcdef;
	t.countdown = alloc_draw_countdown(&t.rng, RATE);
	enum { CLASSES = 5 };
	const size_t size[CLASSES] = { 16, 200, 3000, RATE, 4 * RATE };
	double true_count[CLASSES] = { 0 }, true_bytes[CLASSES] = { 0 };
	double est_count[CLASSES] = { 0 }, est_bytes[CLASSES] = { 0 };
	/* Each class gets about 2 GiB, i.e. ~32k sample points. */
	const double budget = 2.0 * 1024 * 1024 * 1024;
	uint64_t x = 88172645463325252ull;
	for (int c = 0; c < CLASSES; c++)
		true_count[c] = 0;
	double total = 0;
	while (total < budget * CLASSES) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		int c = (int)(x % CLASSES);
		if (true_bytes[c] >= budget)
			continue;
		true_count[c] += 1;
		true_bytes[c] += (double)size[c];
		total += (double)size[c];
		if (alloc_countdown(&t, size[c], 0)) {
			t.countdown = alloc_draw_countdown(&t.rng, RATE);
			double w = sample_weight(size[c], RATE);
			est_count[c] += (double)sample_round_random(&t.rng, w);
			est_bytes[c] += (double)sample_round_random(&t.rng, w * (double)size[c]);
		}
	}
	for (int c = 0; c < CLASSES; c++) {
		double ec = est_count[c] / true_count[c] - 1, eb = est_bytes[c] / true_bytes[c] - 1;
		if (fabs(ec) > 0.03 || fabs(eb) > 0.03)
			fprintf(stderr, "  class %zu: count error %.4f bytes error %.4f\n", size[c], ec, eb);
		CHECK(fabs(ec) < 0.03);
		CHECK(fabs(eb) < 0.03);
	}
}

static void nesting_guard(void)
{
	struct alloc_thread t;
	memset(&t, 0, sizeof(t));
	t.countdown = 1000;
	CHECK(alloc_enter(&t, 5000));
	CHECK(!alloc_enter(&t, 4000));         /* deeper on the stack: nested */
	CHECK(!alloc_countdown(&t, 2000, 4000)); /* nested allocations are not counted */
	CHECK(t.countdown == 1000);
	CHECK(!alloc_countdown(&t, 10, 5000)); /* the outermost hook itself counts */
	CHECK(t.countdown == 990);
	alloc_leave(&t);
	CHECK(alloc_enter(&t, 4000));
	alloc_leave(&t);
	/* A stale mark (exception through operator new) heals from a shallower frame. */
	t.outer_sp = 3000;
	CHECK(alloc_enter(&t, 3500));
	alloc_leave(&t);
	CHECK(t.outer_sp == 0);
}

/* Thread pointers that all hash to the same home slot. */
static size_t colliding_tps(uintptr_t *out, size_t n)
{
	size_t found = 0;
	uint32_t home = alloc_thread_hash((uintptr_t)0x7f0000001000ull);
	for (uintptr_t tp = 0x7f0000001000ull; found < n && tp < 0x7f0100000000ull; tp += 64)
		if (alloc_thread_hash(tp) == home)
			out[found++] = tp;
	return found;
}

static void *exit_at_once(void *arg)
{
	*(int *)arg = (int)syscall(SYS_gettid);
	return NULL;
}

static void thread_table_claims_and_collisions(void)
{
	alloc_collector_after_fork_child(); /* empty table */
	uintptr_t tps[ALLOC_THREAD_PROBES + 1];
	CHECK(colliding_tps(tps, ALLOC_THREAD_PROBES + 1) == ALLOC_THREAD_PROBES + 1);
	struct alloc_thread *slots[ALLOC_THREAD_PROBES];
	for (uint32_t i = 0; i < ALLOC_THREAD_PROBES; i++) {
		slots[i] = alloc_thread_claim(tps[i]);
		CHECK(slots[i] != NULL);
		for (uint32_t j = 0; j < i && slots[i]; j++)
			CHECK(slots[j] != slots[i]);
		CHECK(slots[i] && slots[i]->countdown >= 1);
	}
	/* Claiming again finds the same slot. */
	for (uint32_t i = 0; i < ALLOC_THREAD_PROBES; i++)
		CHECK(alloc_thread_claim(tps[i]) == slots[i]);
	/* The window is full of live threads (all have our tid): no slot. */
	struct alloc_stats before, after;
	alloc_get_stats(&before);
	CHECK(alloc_thread_claim(tps[ALLOC_THREAD_PROBES]) == NULL);
	alloc_get_stats(&after);
	CHECK(after.no_thread_slot == before.no_thread_slot + 1);
	/* A slot whose thread exited is taken over (checks are rate limited). */
	int dead_tid = 0;
	pthread_t th;
	CHECK(pthread_create(&th, NULL, exit_at_once, &dead_tid) == 0);
	pthread_join(th, NULL);
	/* join returns when the tid is cleared; the kernel may still show the
	 * exiting task to tgkill for a moment: wait (bounded) until it is gone. */
	for (int i = 0; i < 1000 && syscall(SYS_tgkill, getpid(), dead_tid, 0) == 0; i++)
		usleep(1000);
	atomic_store(&slots[3]->tid, dead_tid);
	struct alloc_thread *got = NULL;
	for (int i = 0; i < 2048 && !got; i++)
		got = alloc_thread_claim(tps[ALLOC_THREAD_PROBES]);
	CHECK(got == slots[3]);
	/* The first draws of different threads differ (random, not zero). */
	int distinct = 0;
	for (uint32_t i = 1; i < ALLOC_THREAD_PROBES; i++)
		distinct += slots[i]->countdown != slots[0]->countdown;
	CHECK(distinct >= (int)ALLOC_THREAD_PROBES - 2);
	alloc_collector_after_fork_child();
	CHECK(atomic_load(&slots[0]->key) == 0);
}

/* Sum of one value slot over a profile. */
static int64_t profile_sum(const struct profile *p, enum sw_value_slot slot)
{
	int64_t sum = 0;
	uint32_t n = profile_sample_count(p);
	for (uint32_t i = 0; i < n; i++) {
		struct profile_sample_view v;
		if (profile_sample_get(p, i, &v))
			sum += v.values[slot];
	}
	return sum;
}

static __attribute__((noinline)) void sample_from_here(struct alloc_thread *t, void *p, size_t n)
{
	t->outer_sp = rt_stack_pointer();
	alloc_sample(t, p, n, (uintptr_t)__builtin_return_address(0));
	alloc_leave(t);
}

static void samples_and_live_heap(void)
{
	struct recorder *rec = recorder_create(NULL);
	CHECK(rec != NULL);
	if (!rec)
		return;
	struct sw_config cfg = test_cfg(SW_KIND_BIT(SW_KIND_ALLOC) | SW_KIND_BIT(SW_KIND_HEAP));
	CHECK(alloc_collector_start(&cfg, rec) == 0);
	struct alloc_thread *t = alloc_thread_self();
	CHECK(t != NULL);
	if (!t)
		return;
	/* 300 fake live blocks of 1000 bytes, at addresses that never hold
	 * anything (the table is keyed by address only). */
	const uintptr_t base = 0x100000000000ull;
	double weight_sum = 0;
	for (int i = 0; i < 300; i++) {
		sample_from_here(t, (void *)(base + (uintptr_t)i * 4096), 1000);
		weight_sum += sample_weight(1000, RATE);
		CHECK(t->countdown >= 1);
	}
	struct alloc_stats s;
	alloc_get_stats(&s);
	CHECK(s.live == 300);
	CHECK(alloc_live_maybe((void *)(base + 4096)));

	struct profile *p = recorder_swap(rec);
	CHECK(p != NULL);
	if (!p)
		return;
	double space = (double)profile_sum(p, SW_V_ALLOC_SPACE);
	CHECK(fabs(space - weight_sum * 1000) < 0.01 * weight_sum * 1000);
	CHECK(fabs((double)profile_sum(p, SW_V_ALLOC_SAMPLES) - weight_sum) < 0.01 * weight_sum);
	/* Every sample carries a stack and the thread id. */
	struct profile_sample_view v;
	CHECK(profile_sample_get(p, 0, &v) && v.depth >= 1 && v.n_labels == 1);

	/* Retire a third; the snapshot has the rest. */
	for (int i = 0; i < 300; i += 3)
		CHECK(alloc_live_retire((void *)(base + (uintptr_t)i * 4096), NULL));
	CHECK(!alloc_live_retire((void *)(base + 0), NULL));
	alloc_collector_before_export(p);
	double live_size = (double)profile_sum(p, SW_V_HEAP_LIVE_SIZE);
	double want = weight_sum * 1000 * 200 / 300;
	CHECK(fabs(live_size - want) < 0.01 * want);
	profile_release(p);

	/* realloc failure path: retire with a copy, restore, still found. */
	struct alloc_live_entry saved;
	CHECK(alloc_live_retire((void *)(base + 4096), &saved));
	CHECK(saved.size == 1000 && saved.pcs != NULL);
	alloc_live_restore(&saved);
	CHECK(alloc_live_retire((void *)(base + 4096), &saved));
	alloc_live_drop(&saved);

	/* After a stop, the next snapshot is the last: the table empties. */
	alloc_collector_stop();
	struct profile *q = recorder_swap(rec);
	CHECK(q != NULL);
	if (q) {
		alloc_collector_before_export(q);
		CHECK(profile_sum(q, SW_V_HEAP_LIVE_SAMPLES) > 0);
		profile_release(q);
	}
	alloc_get_stats(&s);
	CHECK(s.live == 0);
	CHECK(!alloc_live_maybe((void *)(base + 8192)));
	recorder_destroy(rec);
}

/* A recorder and the live-heap collector started on it; the calling
 * thread's slot, or NULL (then *rec may still need destroying). */
static struct alloc_thread *start_live_heap(struct recorder **rec)
{
	*rec = recorder_create(NULL);
	CHECK(*rec != NULL);
	if (!*rec)
		return NULL;
	struct sw_config cfg = test_cfg(SW_KIND_BIT(SW_KIND_HEAP));
	CHECK(alloc_collector_start(&cfg, *rec) == 0);
	return alloc_thread_self();
}

/* Stops the collector, takes its last snapshot (which empties the live
 * table) and destroys the recorder. */
static void stop_live_heap(struct recorder *rec)
{
	alloc_collector_stop();
	struct profile *p = recorder_swap(rec);
	if (p) {
		alloc_collector_before_export(p);
		profile_release(p);
	}
	recorder_destroy(rec);
}

/* Many addresses in one probe run; deleting from the middle (backward
 * shift) must keep every other entry reachable. */
static void live_table_collisions(void)
{
	struct recorder *rec;
	struct alloc_thread *t = start_live_heap(&rec);
	if (!t)
		return;
	enum { N = 40 };
	uintptr_t addr[N];
	size_t found = 0;
	uint32_t home = alloc_live_home(0x200000000000ull);
	for (uintptr_t a = 0x200000000000ull; found < N / 2; a += 16)
		if (alloc_live_home(a) == home)
			addr[found++] = a;
	/* and neighbours whose home is the next slots */
	for (uintptr_t a = 0x300000000000ull; found < N; a += 16) {
		uint32_t h = alloc_live_home(a);
		if (h == ((home + 1 + found % 3) & (ALLOC_LIVE_SLOTS - 1u)))
			addr[found++] = a;
	}
	for (size_t i = 0; i < N; i++)
		sample_from_here(t, (void *)addr[i], 64);
	struct alloc_stats s;
	alloc_get_stats(&s);
	CHECK(s.live == N);
	for (size_t i = 0; i < N; i += 2)
		CHECK(alloc_live_retire((void *)addr[i], NULL));
	for (size_t i = 1; i < N; i += 2)
		CHECK(alloc_live_retire((void *)addr[i], NULL));
	alloc_get_stats(&s);
	CHECK(s.live == 0);
	for (size_t i = 0; i < N; i++)
		CHECK(!alloc_live_maybe((void *)addr[i]));
	/* The filter dismisses nearly every address that was never sampled. */
	sample_from_here(t, (void *)0x400000000000ull, 64);
	int positives = 0;
	for (uintptr_t a = 0x500000000000ull, i = 0; i < 100000; i++, a += 48)
		positives += alloc_live_maybe((void *)a);
	CHECK(positives < 100);
	CHECK(alloc_live_retire((void *)0x400000000000ull, NULL));
	stop_live_heap(rec);
}

/* A filter bit stays set while any live entry hashes to it and is cleared
 * with the last one, for entries sharing the big filter's bit, sharing only
 * its home slot, and sharing only the small filter's bit; and, across a
 * random churn in a narrow address range, no live entry is ever dismissed. */
static void filter_bits_follow_live_set(void)
{
	struct recorder *rec;
	struct alloc_thread *t = start_live_heap(&rec);
	if (!t)
		return;
	const uintptr_t base = 0x700000000000ull;
	uint32_t h = alloc_addr_hash(base);
	uintptr_t same_bit[3] = { base, 0, 0 }, same_home = 0, same_small = 0;
	uint32_t n_same = 1;
	for (uintptr_t a = base + 16; n_same < 3 || !same_home || !same_small; a += 16) {
		uint32_t g = alloc_addr_hash(a);
		if (g == h && n_same < 3)
			same_bit[n_same++] = a;
		else if (g == (h ^ 1u) && !same_home)
			same_home = a; /* the other half of the home slot */
		else if (g >> (ALLOC_FILTER_BITS - ALLOC_FILTER_SMALL_BITS) ==
				 h >> (ALLOC_FILTER_BITS - ALLOC_FILTER_SMALL_BITS) &&
			 (g >> 1) != (h >> 1) && !same_small)
			same_small = a;
	}
	CHECK(alloc_live_home(same_home) == alloc_live_home(base));
	uint32_t small = h >> (ALLOC_FILTER_BITS - ALLOC_FILTER_SMALL_BITS);
	for (uint32_t i = 0; i < 3; i++)
		sample_from_here(t, (void *)same_bit[i], 64);
	sample_from_here(t, (void *)same_home, 64);
	sample_from_here(t, (void *)same_small, 64);
	for (uint32_t i = 0; i < 3; i++) {
		CHECK(alloc_filter_test(alloc_live_filter, h));
		CHECK(alloc_live_retire((void *)same_bit[i], NULL));
	}
	CHECK(!alloc_filter_test(alloc_live_filter, h));
	CHECK(alloc_filter_test(alloc_live_filter, h ^ 1u));
	CHECK(alloc_filter_test(alloc_live_filter_small, small));
	CHECK(alloc_live_retire((void *)same_home, NULL));
	CHECK(!alloc_filter_test(alloc_live_filter, h ^ 1u));
	CHECK(alloc_filter_test(alloc_live_filter_small, small));
	CHECK(alloc_live_retire((void *)same_small, NULL));
	CHECK(!alloc_filter_test(alloc_live_filter_small, small));

	/* Churn: 4096 addresses in 64 KiB, so homes and bits collide often. */
	enum { SPAN = 4096, OPS = 20000 };
	static bool live[SPAN];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	bool ok = true;
	for (uint32_t op = 0; op < OPS && ok; op++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint32_t k = (uint32_t)(x >> 40) % SPAN;
		void *p = (void *)(base + (uintptr_t)k * 16u);
		if (live[k])
			ok = alloc_live_retire(p, NULL);
		else
			sample_from_here(t, p, 64);
		live[k] = !live[k];
		for (uint32_t j = 0; j < SPAN && ok; j += 97)
			ok = !live[j] || alloc_live_maybe((void *)(base + (uintptr_t)j * 16u));
	}
	CHECK(ok);
	for (uint32_t k = 0; k < SPAN; k++)
		if (live[k])
			CHECK(alloc_live_retire((void *)(base + (uintptr_t)k * 16u), NULL));
	uint64_t any = 0;
	for (uint32_t w = 0; w < RT_ARRAY_LEN(alloc_live_filter); w++)
		any |= atomic_load(&alloc_live_filter[w]);
	for (uint32_t w = 0; w < RT_ARRAY_LEN(alloc_live_filter_small); w++)
		any |= atomic_load(&alloc_live_filter_small[w]);
	CHECK_EQ_U64(any, 0);
	stop_live_heap(rec);
}

/* The live table grows from ALLOC_LIVE_MIN_SLOTS as entries arrive: every
 * entry stays findable across the doublings, the snapshot holds them all,
 * and the bound of ALLOC_LIVE_MAX entries still holds at full size. */
static void live_table_grows(void)
{
	struct recorder *rec;
	struct alloc_thread *t = start_live_heap(&rec);
	if (!t)
		return;
	const uintptr_t base = 0x600000000000ull;
	const uint32_t n = ALLOC_LIVE_MAX + 100u;
	for (uint32_t i = 0; i < n; i++)
		sample_from_here(t, (void *)(base + (uintptr_t)i * 64), 64);
	struct alloc_stats s;
	alloc_get_stats(&s);
	CHECK(s.live == ALLOC_LIVE_MAX);
	CHECK(s.live_dropped >= 100);
	struct profile *p = recorder_swap(rec);
	CHECK(p != NULL);
	if (p) {
		alloc_collector_before_export(p);
		CHECK_EQ_U64(profile_sample_count(p) > 0, 1);
		profile_release(p);
	}
	uint32_t retired = 0;
	for (uint32_t i = 0; i < ALLOC_LIVE_MAX; i++)
		retired += alloc_live_retire((void *)(base + (uintptr_t)i * 64), NULL);
	CHECK_EQ_U64(retired, ALLOC_LIVE_MAX);
	alloc_get_stats(&s);
	CHECK_EQ_U64(s.live, 0);
	stop_live_heap(rec);
}

int main(void)
{
	RUN(weight_matches_formula);
	RUN(countdown_draws_are_exponential);
	RUN(random_rounding_is_unbiased);
	RUN(sampling_is_unbiased_per_size_class);
	RUN(nesting_guard);
	RUN(thread_table_claims_and_collisions);
	RUN(samples_and_live_heap);
	RUN(live_table_collisions);
	RUN(live_table_grows);
	RUN(filter_bits_follow_live_set);
	return CHECK_DONE();
}
