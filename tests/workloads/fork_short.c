/* Short-lived forked children, the shape of a server that forks a process
 * per connection: the parent forks N children one after another; a child
 * either exits at once (no sample of any kind) or, with BURN_MS > 0, burns
 * that much CPU first.  The parent waits for each, burns ~50 ms itself and
 * writes the children's pids, one a line; it allocates nothing.  With
 * ALLOC_KB, each child first allocates (and frees) that many 1 KiB blocks;
 * with KEEP, it keeps them (live heap at its exit).  With PARENT_KB, the
 * parent first allocates that many 1 KiB blocks and keeps them (a live
 * heap every child inherits).  With IN_LIBC, a child burns its CPU in libc
 * instead, sorting with qsort (its samples fall in libc's code); with
 * IN_LIBC 2, child i uses libc function i % 4 of qsort, snprintf("%g"),
 * strftime and regexec, which are in translation units further and further
 * into libc's debug information.  With
 * BURST, the parent forks all N children first, each waiting on a pipe,
 * then lets them all run at once (and exit about together), then waits.
 * Usage: fork_short N [BURN_MS [ALLOC_KB [KEEP [PARENT_KB [IN_LIBC [BURST]]]]]] */
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static void *volatile sink_block;

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn(double seconds)
{
	double end = cpu_s() + seconds;
	uint64_t h = sink;
	while (cpu_s() < end)
		for (int i = 0; i < 10000; i++)
			h = (h ^ (uint64_t)i) * 0x100000001b3ull + 7;
	sink = h;
}

/* Formats, then matches, again and again: most of the CPU in libc's
 * snprintf, strftime or regexec (which = 1, 2, 3). */
__attribute__((noinline)) static void burn_in_libc_unit(double seconds, int which)
{
	char buf[256];
	regex_t re;
	if (which == 3 && regcomp(&re, "([a-z]+)[0-9]*(x|y)+$", REG_EXTENDED) != 0)
		return;
	double end = cpu_s() + seconds;
	uint64_t h = 0;
	struct tm tm = { .tm_year = 120, .tm_mon = 5, .tm_mday = 7 };
	while (cpu_s() < end) {
		for (int i = 0; i < 200; i++) {
			if (which == 1)
				h += (uint64_t)snprintf(buf, sizeof(buf), "%.17g %g", 1.0 / (i + 3), 1e-7 * i);
			else if (which == 2)
				h += strftime(buf, sizeof(buf), "%A %d %B %Y %H:%M:%S %j %U %Z", &tm);
			else
				h += (uint64_t)regexec(&re, "abcdefghij0123456789xyxyxyz", 0, NULL, 0);
		}
	}
	if (which == 3)
		regfree(&re);
	sink = h;
}

static int by_value(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Sorts a scrambled array again and again: most of the CPU in qsort. */
__attribute__((noinline)) static void burn_in_libc(double seconds)
{
	static uint32_t v[4096];
	double end = cpu_s() + seconds;
	uint32_t x = 1;
	while (cpu_s() < end) {
		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
			v[i] = x = x * 1103515245u + 12345u;
		qsort(v, sizeof(v) / sizeof(v[0]), sizeof(v[0]), by_value);
	}
	sink = v[0];
}

/* Waits for a child that must exit with 0, then writes its pid. */
static int reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 0;
	/* Not stdio: its buffer would be the parent's only allocation, one the
	 * allocation profiler could sample and every child inherit as live
	 * heap. */
	char line[24];
	int len = snprintf(line, sizeof(line), "%d\n", (int)pid);
	return write(1, line, (size_t)len) == len;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	double burn_s = argc > 2 ? atof(argv[2]) / 1e3 : 0;
	int alloc_kb = argc > 3 ? atoi(argv[3]) : 0;
	int keep = argc > 4 ? atoi(argv[4]) : 0;
	int parent_kb = argc > 5 ? atoi(argv[5]) : 0;
	int in_libc = argc > 6 ? atoi(argv[6]) : 0;
	int burst = argc > 7 ? atoi(argv[7]) : 0;
	int gate[2] = { -1, -1 };
	if (burst && pipe(gate) != 0)
		return 1;
	pid_t pids[256]; /* the children waited for after a burst */
	if (burst && n > 256)
		n = 256;
	for (int k = 0; k < parent_kb; k++)
		sink_block = malloc(1024); /* kept: live in the parent and every child */
	burn(0.05);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			if (burst) {
				char c;
				close(gate[1]);
				if (read(gate[0], &c, 1) != 0) /* end of file: all run */
					_exit(4);
			}
			if (burn_s > 0 && in_libc == 2 && i % 4 != 0)
				burn_in_libc_unit(burn_s, i % 4);
			else if (burn_s > 0 && in_libc)
				burn_in_libc(burn_s);
			else if (burn_s > 0)
				burn(burn_s);
			for (int k = 0; k < alloc_kb; k++) {
				sink_block = malloc(1024);
				if (!keep)
					free(sink_block);
			}
			exit(0); /* exit, not _exit: the library's exit export runs */
		}
		if (burst)
			pids[i] = pid;
		else if (!reap(pid))
			return 2;
	}
	if (burst) {
		close(gate[0]);
		close(gate[1]); /* all children read end of file at once */
		for (int i = 0; i < n; i++)
			if (!reap(pids[i]))
				return 2;
	}
	return 0;
}
