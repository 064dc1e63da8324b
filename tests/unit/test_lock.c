/* The lock sampler (collect/lock.c): its sampling decision, check rate and
 * countdown against their distributions, lock names, and holds of a dead
 * thread. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "collect/alloc.h"
#include "collect/lock.h"
#include "collect/sample.h"
#include "symbols/data_symbols.h"

static void test_lock_decision_rate(void)
{
	/* Over uniform draws, the fraction sampled is 1 - exp(-w/R) and the
	 * weighted sum of waits is unbiased. */
	const uint64_t mean = 1000000;
	const uint64_t waits[] = { 1000, 100000, 1000000, 5000000 };
	for (size_t k = 0; k < 4; k++) {
		uint64_t hits = 0, n = 200000;
		double est = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t u = (i * 0x9e3779b97f4a7c15ull) ^ (i >> 7);
			if (lock_sample_decide(waits[k], mean, u)) {
				hits++;
				est += sample_weight(waits[k], mean) * (double)waits[k];
			}
		}
		double truth = (double)n * (double)waits[k];
		CHECK(est / truth > 0.9 && est / truth < 1.1);
	}
	CHECK(!lock_sample_decide(0, mean, 0));
	CHECK(lock_sample_decide(1000000000ull, mean, UINT64_MAX - 1));
}

static void test_lock_countdown_geometric(void)
{
	/* Geometric with mean K: every acquisition checked with probability
	 * 1/K, so P(countdown > n) = (1 - 1/K)^n. */
	struct rt_rng rng = { { 0x1234567887654321ull, 0x0fedcba987654321ull } };
	const uint32_t ks[] = { 2, 16, 1024, 65536 };
	for (size_t k = 0; k < 4; k++) {
		const uint32_t n = 200000;
		double sum = 0;
		uint32_t over_k = 0, below_1 = 0;
		for (uint32_t i = 0; i < n; i++) {
			int32_t c = lock_draw_countdown(ks[k], rt_rng_uniform(&rng));
			below_1 += c < 1;
			over_k += (uint32_t)c > ks[k];
			sum += c;
		}
		double mean = sum / n, p_over = (double)over_k / n;
		double want = rt_exp((double)ks[k] * rt_ln(1.0 - 1.0 / ks[k]));
		CHECK(below_1 == 0);
		CHECK(mean / ks[k] > 0.98 && mean / ks[k] < 1.02);
		CHECK(p_over - want < 0.01 && want - p_over < 0.01);
	}
	CHECK(lock_draw_countdown(1, 0.5) == 1);
	CHECK(lock_draw_countdown(1024, 1.0) == 1);
	/* u >= 2^-53 in practice; even far below, no overflow */
	CHECK(lock_draw_countdown(LOCK_MAX_CHECK_EVERY, 1e-300) > 1000000);
}

static void test_lock_check_rate(void)
{
	const uint64_t us = 1000;
	CHECK_EQ_U64(lock_next_every(1, 10 * us, 65536), 2);
	CHECK_EQ_U64(lock_next_every(0, 10 * us, 65536), 2);
	CHECK_EQ_U64(lock_next_every(65536, 10 * us, 65536), 65536);
	CHECK_EQ_U64(lock_next_every(4096, 10 * us, 1024), 1024);
	CHECK_EQ_U64(lock_next_every(64, 100 * us, 65536), 64);
	CHECK_EQ_U64(lock_next_every(64, 200 * us, 65536), 64);
	CHECK_EQ_U64(lock_next_every(1024, 1000 * us, 65536), 128);
	CHECK_EQ_U64(lock_next_every(1024, 1000000000ull, 65536), 1);
	CHECK_EQ_U64(lock_next_every(1, UINT64_MAX, 65536), 1);
	CHECK_EQ_U64(lock_next_every(8, 10 * us, 0), 1);
	CHECK_EQ_U64(lock_wait_mean(10000000, 1024), 9765);
	CHECK_EQ_U64(lock_wait_mean(10000000, 0), 10000000);
	CHECK_EQ_U64(lock_wait_mean(1, 1024), 1);
}

/* One simulated thread's acquisitions under the hooks' rules (lock.h):
 * the countdown, a check for certain after each 10 ms tick, K adapted to
 * the time between checks, and the wait sampling.  Its acquisitions
 * alternate between hot uncontended phases (10 ns apart: K grows) and
 * contended ones (each waits 2 ms, every fifth 20 ms).  Adds the true and
 * estimated acquisition counts and total waits to sums[4]. */
static void lock_check_play(struct rt_rng *rng, uint32_t phases, uint32_t hot_len,
			    uint32_t cold_len, double sums[4])
{
	const uint64_t sample_ns = 1000000, tick_ns = 10000000;
	uint64_t now = 1, last_check = 0;
	uint32_t every = 1, thread_epoch = 0;
	int32_t countdown = 0;
	for (uint32_t phase = 0; phase < phases; phase++) {
		bool hot = phase % 2 == 0;
		uint32_t len = hot ? hot_len : cold_len;
		for (uint32_t i = 0; i < len; i++) {
			uint64_t wait = hot ? 0 : (i % 5 == 4 ? 20000000u : 2000000u);
			uint32_t epoch = (uint32_t)(now / tick_ns) + 1u;
			now += 10 + wait;
			sums[0] += 1;
			sums[2] += (double)wait;
			uint32_t weight;
			if (thread_epoch != epoch) {
				thread_epoch = epoch;
				weight = 1;
			} else if (--countdown > 0) {
				continue;
			} else {
				weight = every;
			}
			sums[1] += weight;
			if (wait) {
				uint64_t mean = lock_wait_mean(sample_ns, weight);
				if (lock_sample_decide(wait, mean, rt_rng_next(rng)))
					sums[3] += weight * sample_weight(wait, mean) * (double)wait;
			}
			every = lock_next_every(every, last_check ? now - last_check : 100000, 65536);
			last_check = now;
			countdown = lock_draw_countdown(every, rt_rng_uniform(rng));
		}
	}
}

/* The weighted sums estimate the acquisition count and the total wait,
 * over one long run and over many shorter ones.  What a tick cannot
 * cover is the first 10 ms of a contended phase after a hot one: those
 * acquisitions are still checked with probability 1/K (K up to thousands)
 * and, rarely, with that weight, a heavy tail that phases of seconds keep
 * small.  The count is noisier than the wait: hot acquisitions carry
 * weights up to 65536 (across seeds both were within 1% and 7%). */
static void test_lock_check_unbiased(void)
{
	struct rt_rng rng = { { 0x9e3779b97f4a7c15ull, 0x2545f4914f6cdd1dull } };
	double one[4] = { 0 }, many[4] = { 0 };
	lock_check_play(&rng, 40, 2000000, 2000, one);
	for (uint32_t run = 0; run < 200; run++)
		lock_check_play(&rng, 10, 50000, 2000, many);
	printf("  one run: acquisitions estimated/true %.4f, wait %.4f; many runs: %.4f, %.4f\n",
	       one[1] / one[0], one[3] / one[2], many[1] / many[0], many[3] / many[2]);
	CHECK(one[1] / one[0] > 0.9 && one[1] / one[0] < 1.1);
	CHECK(one[3] / one[2] > 0.97 && one[3] / one[2] < 1.03);
	CHECK(many[1] / many[0] > 0.9 && many[1] / many[0] < 1.1);
	CHECK(many[3] / many[2] > 0.97 && many[3] / many[2] < 1.03);
}

static void test_lock_names(void)
{
	struct data_symbol_index idx;
	memset(&idx, 0, sizeof(idx));
	char out[96];
	lock_name_format(&idx, 0x1234, out, sizeof(out));
	CHECK(strcmp(out, "0x1234") == 0);
}

/* A thread that starts with the thread pointer of one that died holding a
 * checked lock does not inherit the hold (its unlock of that lock must not
 * be recorded as the dead thread's release). */
static void test_lock_holds_of_a_dead_thread_forgotten(void)
{
	struct recorder *rec = recorder_create(NULL);
	CHECK(rec != NULL);
	if (!rec)
		return;
	struct sw_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.kinds = SW_KIND_BIT(SW_KIND_LOCK);
	cfg.max_frames = 64;
	CHECK(lock_collector_start(&cfg, rec) == 0);
	static int mutex_stand_in;
	lock_acquired(&mutex_stand_in, rt_monotonic_ns(), 1);
	CHECK(lock_held_by_self(&mutex_stand_in));
	/* This thread's slot, as a new thread with the same pointer finds it. */
	struct alloc_thread *slot = alloc_thread_started((int)syscall(SYS_gettid));
	CHECK(slot != NULL && slot->lock_held == 1);
	lock_thread_started(slot);
	CHECK(!lock_held_by_self(&mutex_stand_in));
	CHECK(slot == NULL || slot->lock_held == 0);
	lock_collector_stop();
	struct profile *p = recorder_swap(rec);
	if (p)
		profile_release(p);
	recorder_destroy(rec);
}

int main(void)
{
	RUN(test_lock_decision_rate);
	RUN(test_lock_countdown_geometric);
	RUN(test_lock_check_rate);
	RUN(test_lock_check_unbiased);
	RUN(test_lock_names);
	RUN(test_lock_holds_of_a_dead_thread_forgotten);
	return CHECK_DONE();
}
