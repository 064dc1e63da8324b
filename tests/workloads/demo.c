/* The demo workload: named threads whose split of CPU, wall time and bytes is
 * known by construction.
 *   cpu-hash    burns CPU in hash_block()       (1 core for the whole run)
 *   cpu-primes  burns CPU in count_primes()     (1 core for the whole run)
 *   sleeper     waits in nap() (nanosleep), no CPU
 *   allocator   allocates in make_small() 1/4 and make_large() 3/4 of the
 *               bytes, keeping every 8th large block live until exit.
 * Usage: demo [seconds]   (default 3) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile int running = 1;
static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t hash_block(uint64_t seed)
{
	uint64_t h = seed;
	for (int i = 0; i < 100000; i++)
		h = (h ^ (uint64_t)i) * 0x100000001b3ull;
	return h;
}

__attribute__((noinline)) static int count_primes(int limit)
{
	int count = 0;
	for (int n = 2; n < limit; n++) {
		int prime = 1;
		for (int d = 2; d * d <= n; d++)
			if (n % d == 0) {
				prime = 0;
				break;
			}
		count += prime;
	}
	return count;
}

__attribute__((noinline)) static void nap(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void *make_small(void)
{
	char *p = malloc(256);
	memset(p, 1, 256);
	return p;
}

__attribute__((noinline)) static void *make_large(void)
{
	char *p = malloc(3 * 256 * 64);
	memset(p, 2, 64);
	return p;
}

static void *cpu_hash_main(void *arg)
{
	(void)arg;
	uint64_t h = 1;
	while (running)
		h = hash_block(h);
	sink = h;
	return NULL;
}

static void *cpu_primes_main(void *arg)
{
	(void)arg;
	/* The limit is read from a volatile so the compiler cannot compute the
	 * (pure) call once and hoist it out of the loop. */
	static volatile int limit = 20000;
	while (running)
		sink += (uint64_t)count_primes(limit);
	return NULL;
}

static void *sleeper_main(void *arg)
{
	(void)arg;
	while (running)
		nap();
	return NULL;
}

#define KEPT_MAX 4096
static void *kept[KEPT_MAX];
static size_t kept_n;
static uint64_t small_bytes, large_bytes, live_bytes;

static void *allocator_main(void *arg)
{
	(void)arg;
	uint64_t round = 0;
	while (running) {
		/* 64 small blocks and 1 large block per round: 64*256 = 16 KiB small,
		 * 48 KiB large, so large is 3/4 of the bytes. */
		for (int i = 0; i < 64; i++) {
			void *p = make_small();
			small_bytes += 256;
			free(p);
		}
		void *q = make_large();
		large_bytes += 3 * 256 * 64;
		if (round % 8 == 0 && kept_n < KEPT_MAX) {
			kept[kept_n++] = q;
			live_bytes += 3 * 256 * 64;
		} else {
			free(q);
		}
		round++;
		if (round % 64 == 0) {
			struct timespec ts = { 0, 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 3.0;
	pthread_t t[4];
	void *(*mains[4])(void *) = { cpu_hash_main, cpu_primes_main, sleeper_main, allocator_main };
	const char *names[4] = { "cpu-hash", "cpu-primes", "sleeper", "allocator" };
	for (int i = 0; i < 4; i++) {
		pthread_create(&t[i], NULL, mains[i], NULL);
		pthread_setname_np(t[i], names[i]);
	}
	double end = now_s() + seconds;
	while (now_s() < end) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	running = 0;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("demo: small %llu bytes, large %llu bytes, live %llu bytes\n",
	       (unsigned long long)small_bytes, (unsigned long long)large_bytes,
	       (unsigned long long)live_bytes);
	/* The kept blocks stay live until exit: the known live heap. */
	return 0;
}
