/* CPU known-answer workload.  Three threads burn CPU in distinct functions;
 * the truth is known by construction and measured without disturbing it:
 *   worker-ab:  alpha_leaf via alpha_mid and beta_leaf, the same code run for
 *               1 and 2 parts of the iterations (random chunk sizes, always
 *               in that ratio): 1/3 and 2/3 of its CPU
 *   worker-g:   gamma_leaf, all of its CPU
 *   main:       delta_leaf, all of its CPU
 * Each thread reads its own CPU clock once, when it ends (no system call
 * inside the measured loops: a timer signal that falls in a system call is
 * delivered at its exit and would blur function boundaries).  main prints
 * "truth <function> <ns>" lines and the process's getrusage total.
 * Usage: cpu_split SECONDS */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#ifdef __cplusplus
#define EXTERN_C extern "C"
#else
#define EXTERN_C
#endif

static volatile int running = 1;
static volatile uint64_t sink;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Each leaf spins for `iters` rounds of integer hashing.  Reading the
 * volatile sink keeps the compiler from treating a leaf as a pure function
 * and hoisting the call out of its loop. */
#define LEAF(name)                                                              \
	EXTERN_C __attribute__((noinline)) uint64_t name(uint64_t iters);        \
	EXTERN_C __attribute__((noinline)) uint64_t name(uint64_t iters)         \
	{                                                                       \
		uint64_t h = iters + sink;                                      \
		for (uint64_t i = 0; i < iters; i++)                            \
			h = (h ^ i) * 0x100000001b3ull + (h >> 7);               \
		return h;                                                       \
	}
LEAF(alpha_leaf)
LEAF(beta_leaf)
LEAF(gamma_leaf)
LEAF(delta_leaf)

EXTERN_C __attribute__((noinline)) uint64_t alpha_mid(uint64_t iters);
EXTERN_C __attribute__((noinline)) uint64_t alpha_mid(uint64_t iters)
{
	uint64_t r = alpha_leaf(iters);
	__asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
	return r + 1;
}

#define CHUNK 200000ull
static uint64_t spent_alpha, spent_beta, spent_gamma, spent_delta;

static void *worker_ab(void *arg)
{
	(void)arg;
	/* Chunk sizes vary per iteration (beta always twice alpha): a loop of
	 * constant length could alias with the kernel tick that CPU timers
	 * fire on, and put every sample at the same phase of the loop. */
	uint64_t lcg = 88172645463325252ull;
	while (running) {
		lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t chunk = CHUNK / 2 + (lcg >> 33) % CHUNK;
		sink += alpha_mid(chunk);
		sink += beta_leaf(2 * chunk);
	}
	uint64_t spent = thread_cpu_ns();
	spent_alpha = spent / 3;
	spent_beta = spent - spent / 3;
	return NULL;
}

static void *worker_g(void *arg)
{
	(void)arg;
	while (running)
		sink += gamma_leaf(CHUNK);
	spent_gamma = thread_cpu_ns();
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	pthread_t a, g;
	pthread_create(&a, NULL, worker_ab, NULL);
	pthread_create(&g, NULL, worker_g, NULL);
	/* The deadline is checked with the vDSO monotonic clock (no system call). */
	double end = now_s() + seconds;
	uint64_t start_cpu = thread_cpu_ns();
	while (now_s() < end)
		sink += delta_leaf(CHUNK);
	spent_delta = thread_cpu_ns() - start_cpu;
	running = 0;
	pthread_join(a, NULL);
	pthread_join(g, NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("truth alpha_leaf %llu\n", (unsigned long long)spent_alpha);
	printf("truth beta_leaf %llu\n", (unsigned long long)spent_beta);
	printf("truth gamma_leaf %llu\n", (unsigned long long)spent_gamma);
	printf("truth delta_leaf %llu\n", (unsigned long long)spent_delta);
	printf("rusage %llu\n", (unsigned long long)((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
						    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull));
	return 0;
}
