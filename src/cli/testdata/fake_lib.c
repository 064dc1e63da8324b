/* A stand-in for libstowaway.so in the CLI's run/install tests: when
 * preloaded it creates the file named by $CLI_FAKE_LIB_MARK, proving the
 * loader really loaded it, and does nothing else. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark_loaded(void)
{
	const char *path = getenv("CLI_FAKE_LIB_MARK");
	if (!path)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
}
