/* Lock-contention known-answer workload.
 *
 * Two static mutexes, each always contended by its own group of threads
 * that sleep while holding it:
 *   lock_alpha: 4 threads, hold about 300 us, for the whole run;
 *   lock_beta:  3 threads, hold about 100 us, for the first half only.
 * Every thread measures its own waits (around pthread_mutex_lock) and holds
 * (from acquisition to unlock), and the program prints the totals:
 *   truth <lock> <acquisitions> <wait_ns> <hold_ns>
 * Usage: lock_known [seconds]   (default 2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock_alpha = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_beta = PTHREAD_MUTEX_INITIALIZER;

struct group {
	const char *name;
	pthread_mutex_t *lock;
	int threads;
	long hold_ns;
	double seconds;
	pthread_mutex_t sum_lock;
	long long acquisitions, wait_ns, hold_ns_total;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void sleep_ns(long ns)
{
	struct timespec ts = { 0, ns };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* One function per lock so the profile's stacks tell them apart. */
__attribute__((noinline)) static void take_alpha(struct group *g, long long *wait, long long *hold)
{
	long long t0 = now_ns();
	if (pthread_mutex_lock(&lock_alpha) != 0)
		abort();
	long long t1 = now_ns();
	sleep_ns(g->hold_ns);
	long long t2 = now_ns();
	if (pthread_mutex_unlock(&lock_alpha) != 0)
		abort();
	*wait += t1 - t0;
	*hold += t2 - t1;
}

__attribute__((noinline)) static void take_beta(struct group *g, long long *wait, long long *hold)
{
	long long t0 = now_ns();
	if (pthread_mutex_lock(&lock_beta) != 0)
		abort();
	long long t1 = now_ns();
	sleep_ns(g->hold_ns);
	long long t2 = now_ns();
	if (pthread_mutex_unlock(&lock_beta) != 0)
		abort();
	*wait += t1 - t0;
	*hold += t2 - t1;
}

static void *worker(void *arg)
{
	struct group *g = arg;
	long long end = now_ns() + (long long)(g->seconds * 1e9);
	long long n = 0, wait = 0, hold = 0;
	while (now_ns() < end) {
		if (g->lock == &lock_alpha)
			take_alpha(g, &wait, &hold);
		else
			take_beta(g, &wait, &hold);
		n++;
	}
	pthread_mutex_lock(&g->sum_lock);
	g->acquisitions += n;
	g->wait_ns += wait;
	g->hold_ns_total += hold;
	pthread_mutex_unlock(&g->sum_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct group groups[2] = {
		{ "lock_alpha", &lock_alpha, 4, 300000, seconds, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 },
		{ "lock_beta", &lock_beta, 3, 100000, seconds / 2, PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 },
	};
	pthread_t th[16];
	int n = 0;
	for (int g = 0; g < 2; g++)
		for (int i = 0; i < groups[g].threads; i++)
			if (pthread_create(&th[n++], NULL, worker, &groups[g]) != 0)
				abort();
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (int g = 0; g < 2; g++)
		printf("truth %s %lld %lld %lld\n", groups[g].name, groups[g].acquisitions,
		       groups[g].wait_ns, groups[g].hold_ns_total);
	return 0;
}
