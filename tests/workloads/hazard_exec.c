/* exec hazards.  Usage: hazard_exec HOW BURN_SECONDS -- PROGRAM ARGS...
 * Burns CPU in 2 threads for BURN_SECONDS (under a 1000 Hz sampler, so
 * timer signals are flying), then runs PROGRAM with HOW:
 *   execve execv execvp execvpe     replace this image (from the main thread,
 *                                   while the burner threads still run)
 *   fork-execve                     fork, exec in the child, wait
 *   spawn spawnp                    posix_spawn / posix_spawnp, wait
 *   execve-clean                    execve with LD_PRELOAD removed from the
 *                                   environment by the program itself
 *   execl execle execlp             the variadic forms (libc execs inside;
 *                                   PROGRAM with exactly 2 arguments)
 *   system popen                    libc runs "sh -c CMD" for PROGRAM given
 *                                   as: /bin/sh -c CMD (popen copies the
 *                                   command's output to stdout)
 * For the non-replacing ways, prints "child status N" and exits with N.
 * Before running PROGRAM it prints its own LD_PRELOAD. */
#define _GNU_SOURCE
#include "hazard_common.h"
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile int stop;

static void *burner(void *arg)
{
	uint64_t x = (uintptr_t)arg;
	while (!stop)
		x = hz_work(100000, x);
	return (void *)(uintptr_t)(x & 1);
}

static int report_child(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 125;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("child status %d\n", code);
	return code;
}

int main(int argc, char **argv)
{
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "usage: %s HOW BURN_SECONDS -- PROGRAM ARGS...\n", argv[0]);
		return 2;
	}
	const char *how = argv[1];
	char **prog = argv + 4;
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, burner, (void *)(uintptr_t)(i + 1)) != 0)
			return 3;
	hz_burn(atof(argv[2]), 5);
	const char *preload = getenv("LD_PRELOAD");
	printf("own LD_PRELOAD=[%s]\n", preload ? preload : "");
	fflush(stdout);
	if (strcmp(how, "execve") == 0)
		execve(prog[0], prog, environ);
	else if (strcmp(how, "execv") == 0)
		execv(prog[0], prog);
	else if (strcmp(how, "execvp") == 0)
		execvp(prog[0], prog);
	else if (strcmp(how, "execvpe") == 0)
		execvpe(prog[0], prog, environ);
	else if (strcmp(how, "execl") == 0 || strcmp(how, "execle") == 0 ||
		 strcmp(how, "execlp") == 0) {
		if (argc != 7)
			return 2;
		if (how[5] == 'e')
			execle(prog[0], prog[0], prog[1], prog[2], (char *)NULL, environ);
		else if (how[5] == 'p')
			execlp(prog[0], prog[0], prog[1], prog[2], (char *)NULL);
		else
			execl(prog[0], prog[0], prog[1], prog[2], (char *)NULL);
	} else if (strcmp(how, "system") == 0 || strcmp(how, "popen") == 0) {
		if (argc != 7 || strcmp(prog[1], "-c") != 0)
			return 2;
		if (how[0] == 's') {
			int st = system(prog[2]);
			int code = st == -1 ? 125 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			printf("child status %d\n", code);
			return code;
		}
		FILE *f = popen(prog[2], "r");
		if (!f)
			return 124;
		char line[512];
		while (fgets(line, sizeof(line), f))
			fputs(line, stdout);
		int st = pclose(f);
		int code = st == -1 ? 125 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		printf("child status %d\n", code);
		return code;
	} else if (strcmp(how, "execve-clean") == 0) {
		size_t n = 0;
		while (environ[n])
			n++;
		char **env = calloc(n + 1, sizeof(char *));
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
				env[k++] = environ[i];
		execve(prog[0], prog, env);
	} else if (strcmp(how, "fork-execve") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			execve(prog[0], prog, environ);
			_exit(127);
		}
		return pid < 0 ? 124 : report_child(pid);
	} else if (strcmp(how, "spawn") == 0 || strcmp(how, "spawnp") == 0) {
		pid_t pid;
		int r = how[5] == 'p' ? posix_spawnp(&pid, prog[0], NULL, NULL, prog, environ)
				      : posix_spawn(&pid, prog[0], NULL, NULL, prog, environ);
		return r != 0 ? 124 : report_child(pid);
	} else {
		return 2;
	}
	perror("exec");
	return 127;
}
