/* Benchmark driver: an uncontended pthread_mutex_lock/unlock loop on one
 * thread.  Prints "ns_per_pair <value>" measured on the thread CPU clock
 * (the best of 5 rounds, stable on a busy machine).
 *
 * glibc on x86-64 drops the lock prefix of its mutex operations while a
 * process has a single thread; any profiler thread (or any second thread of
 * the program) turns that off.  With "mt", one idle thread is started
 * before the loop so every configuration measures the multi-threaded
 * mutex, the one a program that needs a lock profile runs.
 * Usage: lock_bench [pairs per round] [st|mt] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t bench_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile long counter;

static double cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
		perror("clock_gettime");
		exit(1);
	}
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000000;
	if (argc > 2 && strcmp(argv[2], "mt") == 0) {
		pthread_t t;
		int e = pthread_create(&t, NULL, idle, NULL);
		if (e != 0) {
			fprintf(stderr, "pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
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
