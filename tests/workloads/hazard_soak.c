/* Soak workload: THREADS threads, each looping over malloc/realloc/free of
 * random sizes (a bounded working set of live blocks), system calls
 * (getpid, write to /dev/null, open/close, a short nanosleep) and a short-
 * lived helper thread every few hundred rounds, for SECONDS.  Its own memory
 * is bounded by construction (each thread holds at most SLOTS blocks of at
 * most 64 KiB), so growth after warm-up is the profiler's.
 * Usage: hazard_soak THREADS SECONDS */
#define _GNU_SOURCE
#include "hazard_common.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOTS 256
#define MAX_THREADS 16

static double deadline;

static void *helper(void *arg)
{
	return (void *)(uintptr_t)(hz_work(5000, (uintptr_t)arg) & 1);
}

static void *worker(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	void *slots[SLOTS] = { 0 };
	int devnull = open("/dev/null", O_WRONLY);
	unsigned long rounds = 0;
	while (hz_now() < deadline) {
		for (int i = 0; i < 64; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			unsigned slot = (unsigned)(rng >> 33) % SLOTS;
			size_t size = 16u << ((rng >> 20) % 13); /* 16 B .. 64 KiB */
			if (slots[slot] && (rng & 4)) {
				void *p = realloc(slots[slot], size);
				if (p)
					slots[slot] = p;
			} else {
				free(slots[slot]);
				slots[slot] = malloc(size);
			}
			if (slots[slot])
				memset(slots[slot], (int)i, size < 256 ? size : 256);
		}
		(void)getpid();
		if (devnull >= 0 && write(devnull, slots, 64) < 0)
			break;
		int fd = open("/proc/self/stat", O_RDONLY);
		if (fd >= 0)
			close(fd);
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
		if (++rounds % 500 == 0) {
			/* A small stack: libc's stack cache then moves VmData by
			 * 64 KiB steps, not 8 MiB ones, and the leak check stays
			 * meaningful. */
			pthread_t h;
			pthread_attr_t a;
			pthread_attr_init(&a);
			pthread_attr_setstacksize(&a, 64 * 1024);
			if (pthread_create(&h, &a, helper, (void *)(uintptr_t)rounds) == 0)
				pthread_join(h, NULL);
			pthread_attr_destroy(&a);
		}
	}
	for (int i = 0; i < SLOTS; i++)
		free(slots[i]);
	if (devnull >= 0)
		close(devnull);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	double seconds = argc > 2 ? atof(argv[2]) : 10;
	if (n < 1 || n > MAX_THREADS)
		return 2;
	deadline = hz_now() + seconds;
	pthread_t t[MAX_THREADS];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1)) != 0)
			return 3;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("soak threads=%d done\n", n);
	return 0;
}
