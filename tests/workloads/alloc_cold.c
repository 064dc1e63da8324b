/* What one allocation sample costs when the caches are cold, as in a busy
 * server, where samples come hundreds of microseconds apart and the program's
 * own work evicts the profiler's tables in between.
 *
 * Each round sweeps a buffer larger than a core's private caches, then
 * allocates and frees one block from one of two 13-deep paths under a 9-deep
 * common part (a server's request handlers under its loop), chosen at random.
 * Prints the mean thread CPU time of the allocating part alone, in ns; the
 * sweep is not timed.  Built without frame pointers, as distributions build.
 *
 * Usage: alloc_cold ROUNDS [SWEEP_MIB [BLOCK_BYTES]]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile long sink;
static void *volatile kept;
static size_t block = 65536;
static unsigned long long draw = 88172645463325252ull;

static double thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* Allocates, touches and frees one block (k keeps the two leaves apart). */
#define LEAF(name, k)                                                           \
	__attribute__((noinline)) static long name(long n)                     \
	{                                                                      \
		char *p = malloc(block);                                       \
		kept = p;                                                      \
		p[k] = (char)n;                                                \
		long r = p[k];                                                 \
		free(kept);                                                    \
		return r + (k);                                                \
	}
LEAF(leaf_a, 0)
LEAF(leaf_b, 1)

#define LINK(name, next, k)                                                     \
	__attribute__((noinline)) static long name(long n)                     \
	{                                                                      \
		long r = next(n + (k));                                        \
		sink += r;                                                     \
		return r + (k);                                                \
	}
LINK(a1, leaf_a, 1) LINK(a2, a1, 1) LINK(a3, a2, 1) LINK(a4, a3, 1) LINK(a5, a4, 1) LINK(a6, a5, 1)
LINK(a7, a6, 1) LINK(a8, a7, 1) LINK(a9, a8, 1) LINK(a10, a9, 1) LINK(a11, a10, 1) LINK(a12, a11, 1)
LINK(b1, leaf_b, 2) LINK(b2, b1, 2) LINK(b3, b2, 2) LINK(b4, b3, 2) LINK(b5, b4, 2) LINK(b6, b5, 2)
LINK(b7, b6, 2) LINK(b8, b7, 2) LINK(b9, b8, 2) LINK(b10, b9, 2) LINK(b11, b10, 2) LINK(b12, b11, 2)

__attribute__((noinline)) static long handle(long n)
{
	draw ^= draw << 13;
	draw ^= draw >> 7;
	draw ^= draw << 17;
	return (draw & 1) ? a12(n) : b12(n);
}
LINK(c1, handle, 3) LINK(c2, c1, 3) LINK(c3, c2, 3) LINK(c4, c3, 3) LINK(c5, c4, 3)
LINK(c6, c5, 3) LINK(c7, c6, 3) LINK(c8, c7, 3)

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: alloc_cold ROUNDS [SWEEP_MIB [BLOCK_BYTES]]\n");
		return 2;
	}
	long rounds = atol(argv[1]);
	size_t sweep = (size_t)(argc > 2 ? atol(argv[2]) : 4) << 20;
	if (argc > 3)
		block = (size_t)atol(argv[3]);
	unsigned char *buf = malloc(sweep);
	if (rounds <= 0 || buf == NULL || block == 0)
		return 2;
	memset(buf, 1, sweep);
	double spent = 0;
	for (long i = 0; i < rounds; i++) {
		for (size_t k = 0; k < sweep; k += 64)
			buf[k]++;
		double t0 = thread_ns();
		sink += c8(i);
		spent += thread_ns() - t0;
	}
	printf("%.1f\n", spent / (double)rounds);
	free(buf);
	return 0;
}
