/* Benchmark driver: an uncontended pthread_mutex_lock/unlock loop on one
 * thread.  Prints "ns_per_pair <value>" measured on the thread CPU clock
 * (the best of 5 rounds, stable on a busy machine).
 * Usage: lock_bench [pairs per round] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t bench_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	double best = 1e30;
	for (int round = 0; round < 5; round++) {
		double t0 = cpu_ns();
		for (long i = 0; i < n; i++) {
			pthread_mutex_lock(&bench_lock);
			counter = counter + 1;
			pthread_mutex_unlock(&bench_lock);
		}
		double ns = (cpu_ns() - t0) / n;
		if (ns < best)
			best = ns;
	}
	printf("ns_per_pair %.2f\n", best);
	return 0;
}
