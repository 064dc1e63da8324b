/* The sampler thread's tick follows the CPU samples it drains: long (few
 * wake-ups) for a program with few busy threads, short enough for many
 * that the ring never holds more than a fraction of its records, and the
 * lock profiler's 10 ms epoch whenever it runs. */
#include <stdint.h>

#include "collect/collect.h"
#include "unit/check.h"

#define MS 1000000ull

/* Ticks from the first (10 ms) at a steady rate of `hz` samples a second. */
static uint64_t settle(uint64_t hz, bool lock, int ticks, uint64_t *most_waiting)
{
	uint64_t tick = 10 * MS;
	*most_waiting = 0;
	for (int i = 0; i < ticks; i++) {
		uint64_t samples = hz * tick / 1000000000ull;
		if (samples > *most_waiting)
			*most_waiting = samples;
		tick = collect_next_tick_ns(tick, samples, lock);
	}
	return tick;
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
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 0, true), 10 * MS);
}

static void tick_grows_gradually_and_drops_at_once(void)
{
	/* At most twice as long per tick: 10, 20, 40, 80, 100 ms. */
	CHECK_EQ_U64(collect_next_tick_ns(10 * MS, 0, false), 20 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(20 * MS, 1, false), 40 * MS);
	CHECK_EQ_U64(collect_next_tick_ns(80 * MS, 0, false), 100 * MS);
	/* A burst (500 samples in a 100 ms tick) goes back to 12.8 ms at once. */
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 500, false), 12800000ull);
	CHECK_EQ_U64(collect_next_tick_ns(100 * MS, 100000, false), 10 * MS);
}

int main(void)
{
	RUN(tick_follows_samples);
	RUN(tick_grows_gradually_and_drops_at_once);
	return CHECK_DONE();
}
