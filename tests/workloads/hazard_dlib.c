/* The library hazard_dlopen loads and unloads in a loop. */
#include <stdint.h>

__attribute__((visibility("default"))) uint64_t hazard_dlib_spin(uint64_t iterations, uint64_t seed);

__attribute__((noinline)) static uint64_t dlib_inner(uint64_t iterations, uint64_t x)
{
	for (uint64_t i = 0; i < iterations; i++)
		x = x * 2862933555777941757ull + 3037000493ull;
	return x;
}

uint64_t hazard_dlib_spin(uint64_t iterations, uint64_t seed)
{
	return dlib_inner(iterations, seed | 1) | 1;
}
