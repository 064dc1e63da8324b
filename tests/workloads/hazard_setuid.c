/* Hazard: a root program drops privileges with setgid/setuid while
 * profiled.  libc broadcasts the change to every thread with an internal
 * signal (glibc SIGSETXID, musl's synccall), including the profiler's own
 * threads; a thread that blocks that signal makes setuid hang.  Prints
 * "dropped uid=U gid=G" and then keeps two threads burning CPU for the given
 * seconds so the test can read /proc/PID/task/x/status meanwhile. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *burn(void *arg)
{
	volatile unsigned long x = (unsigned long)arg;
	while (!stop)
		x = x * 6364136223846793005ul + 1;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	unsigned id = argc > 2 ? (unsigned)atoi(argv[2]) : 65534;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, burn, (void *)(long)i) != 0)
			return 2;
	/* Let the profiler's threads settle and sample for a while first. */
	struct timespec pause = { 0, 300 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	if (setgid(id) != 0 || setuid(id) != 0) {
		perror("setgid/setuid");
		return 3;
	}
	printf("dropped uid=%u gid=%u\n", (unsigned)getuid(), (unsigned)getgid());
	fflush(stdout);
	double end = now_s() + seconds;
	while (now_s() < end)
		nanosleep(&pause, NULL);
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	puts("done");
	return 0;
}
