/* A prefork server's memory shape: the parent warms up (allocations, a
 * helper thread, short blocking reads), then forks N workers that serve
 * "requests" (a few small allocations, a pipe write and read, a little CPU)
 * for SECONDS.  Midway each worker reads its own /proc/self/smaps_rollup and
 * prints "worker <pid> pss_anon_kb <n> private_dirty_kb <n> requests <n>",
 * so a test can compare the memory a forked process pays with and without
 * the profiler.  Usage: prefork_mem WORKERS SECONDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One request: allocations of mixed sizes, a round trip through a pipe, some
 * hashing. */
__attribute__((noinline)) static void serve(int rd, int wr, uint64_t k)
{
	char *blocks[8];
	for (int i = 0; i < 8; i++) {
		blocks[i] = malloc(32 + (size_t)((k * 7 + (uint64_t)i * 131) % 2000));
		if (!blocks[i])
			abort();
		blocks[i][0] = (char)i;
	}
	char c = 'x';
	if (write(wr, &c, 1) != 1 || read(rd, &c, 1) != 1)
		abort();
	uint64_t h = k;
	for (int i = 0; i < 2000; i++)
		h = (h ^ (uint64_t)i) * 0x100000001b3ull + (uint64_t)blocks[i & 7][0];
	sink += h;
	for (int i = 0; i < 8; i++)
		free(blocks[i]);
}

static long rollup_kb(const char *field)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static void *helper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void work(double seconds, int report)
{
	int p[2];
	if (pipe(p) != 0)
		abort();
	double start = now_s(), end = start + seconds;
	int reported = !report;
	uint64_t k = 0;
	while (now_s() < end) {
		serve(p[0], p[1], k++);
		if (!reported && now_s() - start >= seconds / 2) {
			printf("worker %d pss_anon_kb %ld private_dirty_kb %ld requests %llu\n",
			       (int)getpid(), rollup_kb("Pss_Anon"), rollup_kb("Private_Dirty"),
			       (unsigned long long)k);
			fflush(stdout);
			reported = 1;
		}
	}
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	int workers = argc > 1 ? atoi(argv[1]) : 4;
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	if (workers < 1 || workers > 64)
		workers = 4;
	pthread_t t;
	pthread_create(&t, NULL, helper, NULL);
	work(0.5, 0); /* the parent warms up as a server's master does */
	pid_t kids[64];
	for (int i = 0; i < workers; i++) {
		fflush(stdout);
		kids[i] = fork();
		if (kids[i] == 0) {
			work(seconds, 1);
			exit(0);
		}
	}
	int failed = 0;
	for (int i = 0; i < workers; i++) {
		int st = 0;
		waitpid(kids[i], &st, 0);
		failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	return failed;
}
