/* Load-matrix workload: fork, exec a shell command in the child, wait. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "echo child says hi; exit 3", (char *)NULL);
		_exit(127);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	printf("parent saw %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
