/* Process-creation and exit hazards under a 1000 Hz CPU sampler:
 *   vfork N        N x vfork + execve("/bin/true") while 2 threads burn CPU
 *   spawn N        N x posix_spawn("/bin/true") while 2 threads burn CPU
 *   exitrace MS    2 threads burn CPU; after MS milliseconds a secondary
 *                  thread calls exit(42) (racing the profiler's periodic
 *                  export and its own final flush); main blocks meanwhile
 * Prints a deterministic line; exitrace exits with status 42. */
#define _GNU_SOURCE
#include "hazard_common.h"
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;
/* The children run without the profiler (no LD_PRELOAD): the hazard here is
 * the parent's process creation, and 300 profiled /bin/true would be slow. */
static char *child_env[] = { "PATH=/usr/bin:/bin", NULL };

static void *burner(void *arg)
{
	uint64_t x = (uintptr_t)arg;
	while (!stop)
		x = hz_work(100000, x);
	return (void *)(uintptr_t)(x & 1);
}

static int wait_ok(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 0;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* vfork in a function of its own: nothing of the caller's frame is live
 * across it. */
__attribute__((noinline)) static pid_t vfork_exec(char **argv)
{
	pid_t pid = vfork();
	if (pid == 0) {
		execve(argv[0], argv, child_env);
		_exit(127);
	}
	return pid;
}

static int run_children(int use_vfork, long n)
{
	char *argv[] = { "/bin/true", NULL };
	long ok = 0;
	for (long i = 0; i < n; i++) {
		pid_t pid;
		if (use_vfork) {
			pid = vfork_exec(argv);
			if (pid < 0)
				return -1;
		} else if (posix_spawn(&pid, argv[0], NULL, NULL, argv, child_env) != 0) {
			return -1;
		}
		ok += wait_ok(pid);
	}
	return (int)ok;
}

static void *exit_later(void *arg)
{
	long ms = (long)(uintptr_t)arg;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
	printf("exiting from a secondary thread\n");
	fflush(stdout);
	exit(42);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, burner, (void *)(uintptr_t)(i + 1)) != 0)
			return 3;
	if (strcmp(argv[1], "exitrace") == 0) {
		pthread_t e;
		if (pthread_create(&e, NULL, exit_later, (void *)(uintptr_t)atol(argv[2])) != 0)
			return 3;
		for (;;)
			pause();
	}
	int use_vfork = strcmp(argv[1], "vfork") == 0;
	if (!use_vfork && strcmp(argv[1], "spawn") != 0)
		return 2;
	long n = atol(argv[2]);
	int ok = run_children(use_vfork, n);
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%s children=%ld ok=%d\n", argv[1], n, ok);
	return ok == n ? 0 : 1;
}
