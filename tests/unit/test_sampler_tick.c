/* The sampler thread's tick follows the CPU samples it drains: long (few
 * wake-ups) for a program with few busy threads, short enough for many
 * that the ring never holds more than a fraction of its records, and the
 * lock profiler's 10 ms epoch whenever it runs; with no sample, up to a
 * second when the threads cannot fill half the ring meanwhile. */
#include <stdint.h>

#include "collect/collect.h"
#include "unit/check.h"

#define MS 1000000ull

/* Ticks from the first (10 ms) at a steady rate of `hz` samples a second. */
static uint64_t settle_idle(uint64_t hz, bool lock, int ticks, uint64_t *most_waiting,
			   uint64_t idle_max)
{
	uint64_t tick = 10 * MS;
	*most_waiting = 0;
	for (int i = 0; i < ticks; i++) {
		uint64_t samples = hz * tick / 1000000000ull;
		if (samples > *most_waiting)
			*most_waiting = samples;
		tick = collect_next_tick_ns(tick, samples, lock, idle_max);
	}
	return tick;
}

static uint64_t settle(uint64_t hz, bool lock, int ticks, uint64_t *most_waiting)
{
	return settle_idle(hz, lock, ticks, most_waiting, 0);
}

static void tick_follows_samples(void)
{
	uint64_t most;
	CHECK_EQ_U64(settle(0, false, 20, &most), 100 * MS);   /* idle: 10 wake-ups a second */
	CHECK_EQ_U64(settle(100, false, 20, &most), 100 * MS); /* one busy thread */
	CHECK(most <= 10);
	/* 40 busy threads: 4000 samples a second, about 64 per tick. */
	uint64_t t = settle(4000, false, 20, &most);
	CHECK(t >= 10 * MS && t <= 20 * MS);
	CHECK(most <= 80);
	/* 1000 busy threads: the shortest tick. */
	CHECK_EQ_U64(settle(100000, false, 20, &most), 10 * MS);
	/* The lock profiler's epoch. */
	CHECK_EQ_U64(settle(0, true, 20, &most), 10 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 0, true, 1000 * MS), 10 * MS);
}

static void idle_ticks_grow_to_a_second(void)
{
	uint64_t most;
	/* No sample: 10, 20, ... 640 ms, then 1 s: one wake-up a second. */
	CHECK_EQ_U64(settle_idle(0, false, 20, &most, 1000 * MS), 1000 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(640 * MS, 0, false, 1000 * MS), 1000 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 0, false, 1000 * MS), 200 * MS);
	/* Bounded by the time the threads need to fill half the ring. */
	CHECK_EQ_U64(settle_idle(0, false, 20, &most, 256 * MS), 256 * MS);
	CHECK_EQ_U64(settle_idle(0, false, 20, &most, 5000 * MS), 1000 * MS);
	CHECK_EQ_U64(settle_idle(0, false, 20, &most, 20 * MS), 100 * MS);
	/* One sample after a long tick: back to 100 ms at once. */
	CHECK_EQ_U64(collect_next_tick_ns(1000 * MS, 1, false, 1000 * MS), 100 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(1000 * MS, 500, false, 1000 * MS), 100 * MS);
	/* The lock profiler's epoch wins. */
	CHECK_EQ_U64(settle_idle(0, true, 20, &most, 1000 * MS), 10 * MS);
}

static void tick_grows_gradually_and_drops_at_once(void)
{
	/* At most twice as long per tick: 10, 20, 40, 80, 100 ms. */
	CHECK_EQ_U64(collect_next_tick_ns(10 * MS, 0, false, 0), 20 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(20 * MS, 1, false, 0), 40 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(80 * MS, 0, false, 0), 100 * MS);
	/* A burst (500 samples in a 100 ms tick) goes back to 12.8 ms at once. */
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 500, false, 0), 12800000ull);
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 100000, false, 0), 10 * MS);
}

int main(void)
{
	RUN(tick_follows_samples);
	RUN(tick_grows_gradually_and_drops_at_once);
	RUN(idle_ticks_grow_to_a_second);
	return CHECK_DONE();
}
