/* CPU overhead benchmark workload: a fixed amount of identical CPU work on
 * each of N threads, so a run's CPU time measures what the profiler added
 * and each thread's share of the samples measures the profiler's fairness.
 *
 * Thread i runs hot_t<i>, a leaf distinct per thread (same instructions, so
 * the same cost, but its own symbol), under a chain of CHAIN_DEPTH frames so
 * every sample unwinds a realistic stack.  The work is chunked: every chunk
 * re-enters the chain.  Built without frame pointers (the CFI path, the
 * normal case for distribution binaries) and with them.
 *
 * DEPTH (optional, default 0) adds that many recursive frames above the
 * chain: an expensive profile for the overhead-cap test.
 *
 * Prints "thread <i> cpu_ns <n>" per thread (its own CPU clock, read when it
 * ends) and "wall_ns <n>" for the whole work.
 * Usage: bench_cpu_work THREADS ITERATIONS_PER_THREAD [DEPTH] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 8
#define CHUNKS 200
#define MAX_DEPTH 5000

static volatile uint64_t sink;

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The per-thread leaves: identical loops; the constant differs only so the
 * compiler cannot fold them into one function. */
#define HOT(n)                                                                  \
	__attribute__((noinline)) uint64_t hot_t##n(uint64_t x, uint64_t iters); \
	__attribute__((noinline)) uint64_t hot_t##n(uint64_t x, uint64_t iters)  \
	{                                                                       \
		for (uint64_t i = 0; i < iters; i++)                            \
			x = (x ^ i) * 0x100000001b3ull + (x >> 7) + (n + 1);           \
		return x;                                                       \
	}
HOT(0)
HOT(1)
HOT(2)
HOT(3)
HOT(4)
HOT(5)
HOT(6)
HOT(7)

typedef uint64_t (*hot_fn)(uint64_t, uint64_t);
static const hot_fn hot[MAX_THREADS] = { hot_t0, hot_t1, hot_t2, hot_t3,
					 hot_t4, hot_t5, hot_t6, hot_t7 };

/* A chain of frames above the leaf.  The volatile read after each call
 * keeps it from becoming a tail call, so every level is a real frame. */
#define LEVEL(n, next)                                                          \
	__attribute__((noinline)) uint64_t level##n(hot_fn f, uint64_t x, uint64_t iters); \
	__attribute__((noinline)) uint64_t level##n(hot_fn f, uint64_t x, uint64_t iters)  \
	{                                                                       \
		uint64_t r = next(f, x + n, iters);                              \
		return r + sink;                                                \
	}
static uint64_t call_leaf(hot_fn f, uint64_t x, uint64_t iters) { return f(x, iters); }
LEVEL(8, call_leaf)
LEVEL(7, level8)
LEVEL(6, level7)
LEVEL(5, level6)
LEVEL(4, level5)
LEVEL(3, level4)
LEVEL(2, level3)
LEVEL(1, level2)

/* DEPTH recursive frames, then the chain. */
__attribute__((noinline)) uint64_t descend(hot_fn f, uint64_t x, uint64_t iters, int depth);
__attribute__((noinline)) uint64_t descend(hot_fn f, uint64_t x, uint64_t iters, int depth)
{
	uint64_t r = depth > 0 ? descend(f, x + 1, iters, depth - 1) : level1(f, x, iters);
	return r + sink;
}

static int extra_depth;

struct worker {
	pthread_t thread;
	int index;
	uint64_t iters;
	uint64_t cpu_ns;
	uint64_t result;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t x = (uint64_t)w->index;
	for (int c = 0; c < CHUNKS; c++)
		x = descend(hot[w->index], x, w->iters / CHUNKS, extra_depth);
	w->result = x;
	w->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: %s THREADS ITERATIONS_PER_THREAD [DEPTH]\n", argv[0]);
		return 2;
	}
	int n = atoi(argv[1]);
	uint64_t iters = strtoull(argv[2], NULL, 10);
	extra_depth = argc == 4 ? atoi(argv[3]) : 0;
	if (n < 1 || n > MAX_THREADS || iters < CHUNKS || extra_depth < 0 || extra_depth > MAX_DEPTH) {
		fprintf(stderr, "THREADS must be 1..%d, ITERATIONS at least %d, DEPTH 0..%d\n",
			MAX_THREADS, CHUNKS, MAX_DEPTH);
		return 2;
	}
	static struct worker workers[MAX_THREADS];
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		workers[i].index = i;
		workers[i].iters = iters;
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	uint64_t all = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(workers[i].thread, NULL);
		all ^= workers[i].result;
	}
	uint64_t wall = clock_ns(CLOCK_MONOTONIC) - start;
	sink = all;
	for (int i = 0; i < n; i++)
		printf("thread %d cpu_ns %llu\n", i, (unsigned long long)workers[i].cpu_ns);
	printf("wall_ns %llu\n", (unsigned long long)wall);
	return 0;
}
