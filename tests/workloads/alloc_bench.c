/* malloc/free-heavy benchmark workload: each thread keeps a ring of 256
 * blocks and replaces a random one per step (mostly small sizes, some
 * medium, a few large; or only small sizes with "small"; or the mixed sizes
 * with every new block written in full with "touched", as a program
 * initializes what it allocates).  With SECONDS,
 * each thread goes on past PAIRS_PER_THREAD until that much wall time has
 * passed (tests that need a run longer than the profiler's measurement
 * windows, whatever the machine's speed).  Prints "pairs N wall_ns W
 * cpu_ns C" (N: the pairs really made).  With WARMUP seconds (less than
 * SECONDS), the numbers cover only what follows the warm-up (a profiler's
 * overhead cap has acted by then).
 * Usage: alloc_bench THREADS PAIRS_PER_THREAD [mixed|small|touched] [SECONDS [WARMUP]] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 256

static long pairs_per_thread;
static int small_only;
static int touch_all;
static unsigned long long deadline_ns; /* CLOCK_MONOTONIC; 0: none */
static atomic_llong progress[256];     /* pairs per thread, updated every 65536 */

static unsigned long long now_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *worker(void *arg)
{
	unsigned long long x = 0x9e3779b97f4a7c15ull ^ (unsigned long long)(size_t)arg;
	void *ring[RING] = { 0 };
	long i = 0;
	atomic_llong *done = &progress[(size_t)arg - 1];
	for (;; i++) {
		if ((i & 65535) == 0)
			atomic_store_explicit(done, i, memory_order_relaxed);
		if (i >= pairs_per_thread &&
		    (!deadline_ns || ((i & 65535) == 0 && now_ns(CLOCK_MONOTONIC) >= deadline_ns)))
			break;
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned pick = (unsigned)(x >> 32) % 1000;
		size_t size;
		if (pick < 900 || small_only)
			size = 16 + (x & 511);             /* small: 16..527 */
		else if (pick < 990)
			size = 512 + (x & 16383);          /* medium: up to 16 KiB */
		else
			size = 16384 + (x & 262143);       /* large: up to 272 KiB */
		unsigned slot = (unsigned)(x >> 16) & (RING - 1);
		free(ring[slot]);
		char *p = malloc(size);
		if (!p)
			abort();
		if (touch_all)
			memset(p, (int)i, size);
		else
			p[0] = (char)i;
		ring[slot] = p;
	}
	for (int k = 0; k < RING; k++)
		free(ring[k]);
	return (void *)(size_t)i;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	pairs_per_thread = argc > 2 ? atol(argv[2]) : 2000000;
	small_only = argc > 3 && strcmp(argv[3], "small") == 0;
	touch_all = argc > 3 && strcmp(argv[3], "touched") == 0;
	double seconds = argc > 4 ? atof(argv[4]) : 0;
	double warmup = argc > 5 ? atof(argv[5]) : 0;
	if (threads < 1 || threads > 256 || pairs_per_thread < 1 || seconds < 0 || seconds > 3600 ||
	    warmup < 0 || (warmup > 0 && warmup >= seconds))
		return 2;
	pthread_t th[256];
	unsigned long long w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	if (seconds > 0)
		deadline_ns = w0 + (unsigned long long)(seconds * 1e9);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(size_t)(i + 1)) != 0)
			return 1;
	long long pairs = 0;
	if (warmup > 0) {
		struct timespec nap = { (time_t)warmup, (long)((warmup - (double)(time_t)warmup) * 1e9) };
		nanosleep(&nap, NULL);
		w0 = now_ns(CLOCK_MONOTONIC);
		c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
		for (int i = 0; i < threads; i++)
			pairs -= atomic_load(&progress[i]);
	}
	for (int i = 0; i < threads; i++) {
		void *done = NULL;
		pthread_join(th[i], &done);
		pairs += (long long)(size_t)done;
	}
	unsigned long long w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	printf("pairs %lld wall_ns %llu cpu_ns %llu\n", pairs, w1 - w0, c1 - c0);
	return 0;
}
