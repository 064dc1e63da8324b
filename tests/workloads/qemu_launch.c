/* Runs the aarch64 program of the same name under qemu-user, for the
 * integration tests of the aarch64 build (tests/integration/aarch64.sh).
 *
 * This launcher is a static x86-64 program, and so is qemu-aarch64-static:
 * neither is touched by the LD_PRELOAD the tests set, which reaches only the
 * emulated aarch64 process.  argv[0] names the program: <dir>/run/NAME runs
 * <dir>/workloads/NAME.  glibc programs find their loader through
 * QEMU_LD_PREFIX (the cross toolchain's sysroot, unless already set); musl's
 * loader is installed at its own path by musl:arm64. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char self[PATH_MAX], target[PATH_MAX];
	(void)argc;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 127;
	self[n] = 0;
	/* The program's name is argv[0]'s: the launcher is installed once
	 * per program as a hard link or copy named after it. */
	const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	char *slash = strrchr(self, '/');
	if (slash == NULL)
		return 127;
	*slash = 0;
	slash = strrchr(self, '/');
	if (slash == NULL)
		return 127;
	*slash = 0;
	if (snprintf(target, sizeof(target), "%s/workloads/%s", self, name) >= (int)sizeof(target))
		return 127;
	setenv("QEMU_LD_PREFIX", "/usr/aarch64-linux-gnu", 0);
	char **args = calloc((size_t)argc + 2, sizeof(*args));
	if (args == NULL)
		return 127;
	args[0] = "qemu-aarch64-static";
	args[1] = target;
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	execvp(args[0], args);
	fprintf(stderr, "qemu_launch: cannot run qemu-aarch64-static for %s: %s\n", target, strerror(errno));
	return 127;
}
