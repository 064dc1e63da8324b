/* Small helpers shared by the hazard workloads (tests/integration/hazards_*). */
#ifndef HAZARD_COMMON_H
#define HAZARD_COMMON_H

#include <stdint.h>
#include <time.h>

static inline double hz_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Burns CPU for about `seconds` of wall time; the result keeps the loop. */
__attribute__((noinline, unused)) static uint64_t hz_burn(double seconds, uint64_t seed)
{
	double end = hz_now() + seconds;
	uint64_t x = seed | 1;
	do {
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	} while (hz_now() < end);
	return x;
}

/* A deterministic amount of work (the same answer profiled or not). */
__attribute__((noinline, unused)) static uint64_t hz_work(uint64_t iterations, uint64_t seed)
{
	uint64_t x = seed | 1;
	for (uint64_t i = 0; i < iterations; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

#endif
