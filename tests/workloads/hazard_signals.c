/* Signal hazards:
 *   blockall SECS       every signal blocked in every thread (set in main
 *                       before any thread starts); 2 threads burn CPU
 *   prof-after SECS     the program installs its own SIGPROF handler in main
 *                       (after the profiler started) and runs
 *                       setitimer(ITIMER_PROF) at 100 Hz while 2 threads burn
 *   prof-before SECS    the same, but the handler is installed before the
 *                       profiler starts: from .preinit_array (glibc runs it
 *                       before any library constructor) or, where the libc
 *                       ignores .preinit_array (musl), by stopping the
 *                       profiler, installing, and starting it again through
 *                       the public API
 * For prof-*: prints "handler calls: N cpu_ms: M" for the second half of
 * the run only (after the profiler has had time to notice), so the ratio
 * N / (M / 10) can be compared with a plain run. */
#define _GNU_SOURCE
#include "hazard_common.h"
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile int stop;
static volatile sig_atomic_t prof_calls;
static volatile int preinit_ran;

static void on_prof(int sig)
{
	(void)sig;
	prof_calls++;
}

static void install_prof_handler(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
}

static void preinit_install(int argc, char **argv, char **envp)
{
	(void)envp;
	if (argc > 1 && strcmp(argv[1], "prof-before") == 0) {
		install_prof_handler();
		preinit_ran = 1;
	}
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit_entry)(int, char **, char **) = preinit_install;

static void *burner(void *arg)
{
	uint64_t x = (uintptr_t)arg;
	while (!stop)
		x = hz_work(100000, x);
	return (void *)(uintptr_t)(x & 1);
}

static double process_cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static int run(const char *mode, double seconds)
{
	int prof = strncmp(mode, "prof-", 5) == 0;
	if (strcmp(mode, "blockall") == 0) {
		sigset_t all;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
	} else if (strcmp(mode, "prof-after") == 0) {
		install_prof_handler();
	} else if (strcmp(mode, "prof-before") == 0 && !preinit_ran) {
		int (*stop_fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "stowaway_stop");
		int (*start_fn)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "stowaway_start");
		if (stop_fn)
			stop_fn();
		install_prof_handler();
		if (start_fn)
			start_fn();
	} else if (strcmp(mode, "prof-before") != 0) {
		return 2;
	}
	if (prof) {
		struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
		if (setitimer(ITIMER_PROF, &it, NULL) != 0)
			return 3;
	}
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, burner, (void *)(uintptr_t)(i + 1)) != 0)
			return 4;
	sleep_s(seconds / 2);
	int calls0 = prof_calls;
	double cpu0 = process_cpu_ms();
	sleep_s(seconds / 2);
	int calls = prof_calls - calls0;
	double cpu = process_cpu_ms() - cpu0;
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (prof)
		printf("handler calls: %d cpu_ms: %.0f\n", calls, cpu);
	printf("%s ok\n", mode);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s blockall|prof-after|prof-before SECS\n", argv[0]);
		return 2;
	}
	return run(argv[1], atof(argv[2]));
}
