/* Interposed calls that never block, for tests/integration/wall_instructions.py:
 * `wall_calls N` makes N rounds of read(/dev/zero, 1 byte), write(/dev/null,
 * 1 byte) and poll(/dev/null, timeout 0) in calls_loop, the function the
 * instruction counts are toggled on, after a warm-up round (the first call
 * of each finds the C library's function). */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int zero_fd, null_fd;

__attribute__((noinline)) static long calls_loop(long rounds)
{
	char byte = 0;
	long done = 0;
	for (long i = 0; i < rounds; i++) {
		struct pollfd p = { .fd = null_fd, .events = POLLOUT };
		done += read(zero_fd, &byte, 1);
		done += write(null_fd, &byte, 1);
		done += poll(&p, 1, 0);
	}
	return done;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	zero_fd = open("/dev/zero", O_RDONLY);
	null_fd = open("/dev/null", O_WRONLY);
	if (zero_fd < 0 || null_fd < 0 || rounds < 1) {
		perror("wall_calls");
		return 1;
	}
	if (calls_loop(1) != 3 || calls_loop(rounds) != 3 * rounds) {
		fprintf(stderr, "wall_calls: a call failed\n");
		return 1;
	}
	return 0;
}
