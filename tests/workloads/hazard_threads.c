/* Thread hazards under a 1000 Hz CPU sampler:
 *   churn N SECONDS   N short-lived threads (each a little work, then exit),
 *                     8 alive at a time, spread over SECONDS
 *   exitread N        N threads on stacks we mmap ourselves, each burning CPU
 *                     up to the moment it exits from deep inside a call
 *                     chain (pthread_exit); the stack is unmapped right after
 *                     join, so a sampler still reading it would fault
 *   deep DEPTH SECS   recursion DEPTH frames deep, burning CPU at the bottom
 *   tiny SECS         threads on 16 KiB and PTHREAD_STACK_MIN stacks burning
 *                     CPU a few frames deep
 * Prints a deterministic summary line (same with or without profiling). */
#define _GNU_SOURCE
#include "hazard_common.h"
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define WAVE 8

static void *short_thread(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	return (void *)(uintptr_t)(hz_work(20000 + (i % 7) * 5000, i) & 1);
}

static int churn(long n, double seconds)
{
	double start = hz_now();
	long done = 0, odd = 0;
	while (done < n) {
		pthread_t t[WAVE];
		int k = 0;
		for (; k < WAVE && done + k < n; k++)
			if (pthread_create(&t[k], NULL, short_thread, (void *)(uintptr_t)(done + k)) != 0) {
				fprintf(stderr, "pthread_create failed at %ld\n", done + k);
				return 1;
			}
		for (int j = 0; j < k; j++) {
			void *r;
			pthread_join(t[j], &r);
			odd += (long)(uintptr_t)r;
		}
		done += k;
		/* Pace the waves over the requested duration. */
		double due = start + seconds * (double)done / (double)n;
		double now = hz_now();
		if (due > now) {
			struct timespec ts = { 0, (long)((due - now) * 1e9) };
			nanosleep(&ts, NULL);
		}
	}
	printf("churn threads=%ld odd=%ld\n", done, odd);
	return 0;
}

__attribute__((noinline)) static void exit_deep(int depth, uint64_t seed)
{
	if (depth > 0) {
		exit_deep(depth - 1, seed + 1);
		__asm__ volatile("" ::: "memory");
		return;
	}
	if (hz_burn(0.003, seed) != 0) /* always: the LCG output is odd */
		pthread_exit(NULL);
}

static void *exiting_thread(void *arg)
{
	exit_deep(40, (uintptr_t)arg);
	return NULL;
}

static int exitread(long n)
{
	const size_t stack_size = 256 * 1024;
	for (long i = 0; i < n; i += 4) {
		pthread_t t[4];
		void *stacks[4];
		for (int k = 0; k < 4; k++) {
			stacks[k] = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
			pthread_attr_t a;
			pthread_attr_init(&a);
			if (stacks[k] == MAP_FAILED || pthread_attr_setstack(&a, stacks[k], stack_size) != 0 ||
			    pthread_create(&t[k], &a, exiting_thread, (void *)(uintptr_t)(i + k)) != 0) {
				fprintf(stderr, "thread %ld failed\n", i + k);
				return 1;
			}
			pthread_attr_destroy(&a);
		}
		for (int k = 0; k < 4; k++) {
			pthread_join(t[k], NULL);
			munmap(stacks[k], stack_size);
		}
	}
	printf("exitread threads=%ld\n", n);
	return 0;
}

__attribute__((noinline)) static uint64_t recurse(int depth, double seconds)
{
	if (depth <= 1)
		return hz_burn(seconds, 7);
	uint64_t r = recurse(depth - 1, seconds);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static int deep(int depth, double seconds)
{
	uint64_t r = recurse(depth, seconds);
	/* r - hz_burn(...) is depth - 1: print only the deterministic part. */
	printf("deep depth=%d ok=%d\n", depth, r != 0);
	return 0;
}

__attribute__((noinline)) static uint64_t small_chain(int depth, double seconds, uint64_t seed)
{
	if (depth <= 0)
		return hz_burn(seconds, seed);
	uint64_t r = small_chain(depth - 1, seconds, seed + 1);
	__asm__ volatile("" ::: "memory");
	return r;
}

static double tiny_seconds;

static void *tiny_thread(void *arg)
{
	return (void *)(uintptr_t)(small_chain(8, tiny_seconds, (uintptr_t)arg) | 1);
}

static int tiny(double seconds)
{
	tiny_seconds = seconds;
	size_t sizes[2] = { 16 * 1024, PTHREAD_STACK_MIN };
	pthread_t t[2];
	for (int k = 0; k < 2; k++) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		if (pthread_attr_setstacksize(&a, sizes[k]) != 0 ||
		    pthread_create(&t[k], &a, tiny_thread, (void *)(uintptr_t)k) != 0) {
			fprintf(stderr, "tiny thread %zu failed\n", sizes[k]);
			return 1;
		}
		pthread_attr_destroy(&a);
	}
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	printf("tiny stacks=16384,%zu ok\n", (size_t)PTHREAD_STACK_MIN);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "churn") == 0)
		return churn(atol(argv[2]), atof(argv[3]));
	if (argc >= 3 && strcmp(argv[1], "exitread") == 0)
		return exitread(atol(argv[2]));
	if (argc >= 4 && strcmp(argv[1], "deep") == 0)
		return deep(atoi(argv[2]), atof(argv[3]));
	if (argc >= 3 && strcmp(argv[1], "tiny") == 0)
		return tiny(atof(argv[2]));
	fprintf(stderr, "usage: %s churn N SECS | exitread N | deep DEPTH SECS | tiny SECS\n", argv[0]);
	return 2;
}
