/* Runs a program under a seccomp filter that refuses one system call, as an
 * old kernel without it (ENOSYS) or a container's filter that does not list
 * it (EPERM) would.
 * Usage: syscall_refused NUMBER ERRNO PROG ARGS...
 * NUMBER is the call's number on this architecture; every other call is
 * allowed.  The filter holds across exec (no_new_privs is set first). */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: syscall_refused NUMBER ERRNO PROG ARGS...\n");
		return 2;
	}
	unsigned nr = (unsigned)strtoul(argv[1], NULL, 10);
	unsigned err = (unsigned)strtoul(argv[2], NULL, 10);
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("syscall_refused: seccomp");
		return 2;
	}
	execvp(argv[3], argv + 3);
	perror("syscall_refused: exec");
	return 127;
}
