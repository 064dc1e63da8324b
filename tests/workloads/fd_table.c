/* A single-threaded host for tests/integration/fd_table.py: what the
 * profiler's own threads see of the program's descriptors.
 *   tables MS            after MS ms, one line per other thread of the
 *                        process: "task TID COMM same=S fds=N host=H"
 *                        (S: kcmp says it shares our descriptor table;
 *                        N: its descriptors; H: how many of them name a file
 *                        one of ours names)
 *   daemon LOG MS        prints "ready", redirects fd 2 to LOG, closes
 *                        stdout and stderr's original, lives MS ms more
 *   fork MS MB           after 300 ms, forks; the child touches MB MiB at once;
 *                        both burn CPU for MS ms and exit
 *   seccomp PROG ARGS..  makes unshare and close_range fail with EPERM
 *                        (seccomp filter), then runs PROG ARGS with
 *                        LD_PRELOAD=$FDT_PRELOAD (glibc build only: musl's
 *                        toolchain has no kernel headers) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#if __has_include(<linux/seccomp.h>)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#define FDT_SECCOMP 1
#endif
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static volatile unsigned long sink;

static void burn_ms(long ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 2654435761u;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

#define LINKS_MAX 64

/* Targets of the descriptors in DIR (a /proc/.../fd directory). */
static int read_links(const char *dir, char links[][96], int cap)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) != NULL && n < cap;) {
		if (e->d_name[0] == '.')
			continue;
		char path[384];
		snprintf(path, sizeof(path), "%.64s/%.255s", dir, e->d_name);
		ssize_t len = readlink(path, links[n], sizeof(links[n]) - 1);
		if (len <= 0)
			continue;
		links[n][len] = 0;
		n++;
	}
	closedir(d);
	return n;
}

static int tables(long ms)
{
	int keep[2];
	if (pipe(keep) != 0) /* a pipe of the program's, held open */
		return 1;
	sleep_ms(ms);
	int pid = getpid();
	static char mine[LINKS_MAX][96], theirs[LINKS_MAX][96];
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/self/task/%d/fd", pid);
	int n_mine = read_links(dir, mine, LINKS_MAX);
	DIR *tasks = opendir("/proc/self/task");
	if (!tasks || n_mine < 0)
		return 1;
	for (struct dirent *e; (e = readdir(tasks)) != NULL;) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == pid)
			continue;
		char path[96], comm[32] = "?";
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
		long same = syscall(SYS_kcmp, pid, tid, 2 /* KCMP_FILES */, 0, 0);
		snprintf(dir, sizeof(dir), "/proc/self/task/%d/fd", tid);
		int n = read_links(dir, theirs, LINKS_MAX), host = 0;
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n_mine; j++)
				if (strcmp(theirs[i], mine[j]) == 0 && strncmp(mine[j], "/proc/", 6) != 0) {
					host++;
					break;
				}
		printf("task %d %s same=%d fds=%d host=%d\n", tid, comm, same == 0, n, host);
	}
	closedir(tasks);
	return 0;
}

static int daemonize(const char *log, long ms)
{
	sleep_ms(300); /* the profiler's threads are running */
	printf("ready\n");
	fflush(stdout);
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (fd < 0 || dup2(fd, 2) != 2)
		return 1;
	close(fd);
	close(1);
	sleep_ms(ms);
	dprintf(2, "exiting\n");
	return 0;
}

static int forker(long ms, long mb)
{
	/* Low descriptor numbers of the program's name its stdout (a regular
	 * file in the test): a number of ours looked up in its table would
	 * name that file. */
	for (int i = 0; i < 12; i++)
		if (dup(1) < 0)
			return 1;
	sleep_ms(300); /* the parent's scheduler watches memory by now */
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		/* At once (one system call where the kernel has it): the child
		 * is over the threshold before its scheduler's first reading,
		 * and the guard must still see that as a crossing of its own. */
		volatile char *p = malloc((size_t)mb << 20);
		if (p && madvise((void *)((uintptr_t)p & ~(uintptr_t)4095), (size_t)mb << 20,
				 23 /* MADV_POPULATE_WRITE, Linux 5.14 */) != 0)
			for (size_t i = 0; i < ((size_t)mb << 20); i += 4096)
				p[i] = 1;
		burn_ms(ms);
		free((void *)p);
		exit(0);
	}
	printf("child %d\n", (int)child);
	fflush(stdout);
	burn_ms(ms);
	int status = 0;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return 1;
	return 0;
}

#ifdef FDT_SECCOMP
static int seccomp_then(char **argv)
{
#if defined(__x86_64__)
#define FDT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FDT_ARCH AUDIT_ARCH_AARCH64
#endif
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FDT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 436 /* close_range */, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { sizeof(code) / sizeof(code[0]), code };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("seccomp");
		return 1;
	}
	const char *so = getenv("FDT_PRELOAD");
	if (so)
		setenv("LD_PRELOAD", so, 1);
	execv(argv[0], argv);
	perror("execv");
	return 1;
}
#endif

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "tables") == 0)
		return tables(atol(argv[2]));
	if (argc >= 4 && strcmp(argv[1], "daemon") == 0)
		return daemonize(argv[2], atol(argv[3]));
	if (argc >= 4 && strcmp(argv[1], "fork") == 0)
		return forker(atol(argv[2]), atol(argv[3]));
#ifdef FDT_SECCOMP
	if (argc >= 3 && strcmp(argv[1], "seccomp") == 0)
		return seccomp_then(argv + 2);
#endif
	fprintf(stderr, "usage: fd_table tables MS | daemon LOG MS | fork MS MB | seccomp PROG ARGS...\n");
	return 2;
}
