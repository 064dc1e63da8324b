/* Descriptor system calls of a single-threaded program, for
 * tests/bench/bench_fdtable.sh: N write+read pairs of one byte on a pipe,
 * then N epoll_wait calls (timeout 0, one idle descriptor).  Prints
 * "write_read_ns X epoll_wait_ns Y": the thread's CPU time per call.
 * With a second argument "thread", an idle thread sharing the descriptor
 * table exists meanwhile (what any thread sharing it costs the calls);
 * "private-thread": an idle thread on a descriptor table of its own (what
 * any second thread costs them: libc's multi-threaded paths). */
#define _GNU_SOURCE
#include <stdio.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile int ready;

static void *idle(void *arg)
{
	if (arg && unshare(CLONE_FILES) != 0)
		exit(1);
	ready = 1;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (argc > 2) {
		void *private_files = strcmp(argv[2], "private-thread") == 0 ? argv : NULL;
		if (pthread_create(&t, NULL, idle, private_files) != 0)
			return 1;
		while (!ready)
			sched_yield();
	}
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int p[2];
	int ep = epoll_create1(0);
	if (n <= 0 || pipe(p) != 0 || ep < 0)
		return 1;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = p[0] }, out;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) != 0)
		return 1;
	char c = 'x';
	double t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1)
			return 1;
	double t1 = cpu_ns();
	for (long i = 0; i < n; i++)
		if (epoll_wait(ep, &out, 1, 0) != 0)
			return 1;
	double t2 = cpu_ns();
	printf("write_read_ns %.1f epoll_wait_ns %.1f\n", (t1 - t0) / (double)n, (t2 - t1) / (double)n);
	return 0;
}
