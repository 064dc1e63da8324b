/* Short threads with a known CPU time each: N threads, one after another
 * (or `par` at a time), each spinning in short_task for MS milliseconds of
 * its own CPU clock, or with "sleep" sleeping that long in nanosleep.
 * Prints the CPU time and the wall time the threads measured in
 * short_task, summed ("tasks_cpu_ns N", then "tasks_wall_ns N").
 * Usage: short_threads N MS [PAR [sleep]] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t task_ns;
static int sleeping;
static struct task_time {
	uint64_t cpu, wall;
} spent[64];

static uint64_t monotonic_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

__attribute__((noinline)) static unsigned spin_leaf(unsigned x)
{
	for (int i = 0; i < 500; i++)
		x = x * 1103515245u + 12345u;
	return x;
}

__attribute__((noinline)) static void *short_task(void *arg)
{
	struct task_time *out = arg;
	uint64_t born = monotonic_ns();
	uint64_t start = thread_cpu_ns(), now = start;
	if (sleeping) {
		struct timespec ts = { (time_t)(task_ns / 1000000000u), (long)(task_ns % 1000000000u) };
		while (nanosleep(&ts, &ts) != 0)
			;
		now = thread_cpu_ns();
	} else {
		volatile unsigned x = 1;
		while (now - start < task_ns) {
			x = spin_leaf(x);
			now = thread_cpu_ns();
		}
	}
	out->cpu = now - start;
	out->wall = monotonic_ns() - born;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int n = atoi(argv[1]);
	task_ns = (uint64_t)(atof(argv[2]) * 1e6);
	int par = argc > 3 ? atoi(argv[3]) : 1;
	sleeping = argc > 4 && strcmp(argv[4], "sleep") == 0;
	if (par < 1 || par > 64)
		return 2;
	uint64_t total = 0, wall = 0;
	for (int i = 0; i < n; i += par) {
		pthread_t t[64];
		int k = n - i < par ? n - i : par;
		for (int j = 0; j < k; j++)
			if (pthread_create(&t[j], NULL, short_task, &spent[j]) != 0)
				return 1;
		for (int j = 0; j < k; j++) {
			pthread_join(t[j], NULL);
			total += spent[j].cpu;
			wall += spent[j].wall;
		}
	}
	printf("tasks_cpu_ns %llu\ntasks_wall_ns %llu\n", (unsigned long long)total,
	       (unsigned long long)wall);
	return 0;
}
