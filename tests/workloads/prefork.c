/* Prefork server shape: the parent starts a helper thread, then forks 8
 * workers; worker i burns CPU in burn_i() only, the parent in burn_parent().
 * Each process prints "<pid> <function>" so a test can match profiles to
 * processes.  Usage: prefork SECONDS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

#define BURN(name, k)                                                           \
	__attribute__((noinline)) static void name(double seconds)              \
	{                                                                       \
		double end = now_s() + seconds;                                 \
		uint64_t h = sink;                                              \
		while (now_s() < end)                                           \
			for (int i = 0; i < 100000; i++)                        \
				h = (h ^ (uint64_t)i) * 0x100000001b3ull + (k);  \
		sink = h;                                                       \
	}
/* Distinct constants: identical bodies would be folded into one function. */
BURN(burn_0, 1) BURN(burn_1, 2) BURN(burn_2, 3) BURN(burn_3, 4)
BURN(burn_4, 5) BURN(burn_5, 6) BURN(burn_6, 7) BURN(burn_7, 8) BURN(burn_parent, 9)

static void (*const burners[8])(double) = { burn_0, burn_1, burn_2, burn_3,
					     burn_4, burn_5, burn_6, burn_7 };

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	pthread_t t;
	pthread_create(&t, NULL, idle_thread, NULL);
	burn_parent(seconds / 4);
	pid_t kids[8];
	for (int i = 0; i < 8; i++) {
		fflush(stdout);
		kids[i] = fork();
		if (kids[i] == 0) {
			burners[i](seconds);
			printf("%d burn_%d\n", (int)getpid(), i);
			exit(0);
		}
	}
	burn_parent(seconds / 4);
	int failed = 0;
	for (int i = 0; i < 8; i++) {
		int st = 0;
		waitpid(kids[i], &st, 0);
		failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	printf("%d burn_parent\n", (int)getpid());
	return failed;
}
