/* Prints whether process_vm_readv works on this process (aarch64.sh: qemu-user
 * does not emulate it, which bounds what the wall test can check there). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
	long x = 42, y = 0;
	struct iovec local = {&y, sizeof(y)}, remote = {&x, sizeof(x)};
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	printf("%s\n", n == (ssize_t)sizeof(y) && y == 42 ? "works" : errno == ENOSYS ? "ENOSYS" : "fails");
	return 0;
}
