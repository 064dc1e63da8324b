/* Interposed calls that never block, for tests/integration/wall_instructions.py:
 * `wall_calls N` makes N rounds of read(/dev/zero, 1 byte), write(/dev/null,
 * 1 byte) and poll(/dev/null, timeout 0) in calls_loop, the function the
 * instruction counts are toggled on, after a warm-up round (the first call
 * of each finds the C library's function).  `wall_calls N alloc`: N rounds
 * of posix_memalign, realloc and free in alloc_loop instead. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

__attribute__((noinline)) static long alloc_loop(long rounds)
{
	long done = 0;
	for (long i = 0; i < rounds; i++) {
		void *p = NULL;
		if (posix_memalign(&p, 64, 64 + (size_t)(i & 63)) != 0)
			return -1;
		void *q = realloc(p, 256);
		if (!q) {
			free(p);
			return -1;
		}
		free(q);
		done++;
	}
	return done;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[2], "alloc") == 0) {
		long rounds = atol(argv[1]);
		if (rounds < 1 || alloc_loop(1) != 1 || alloc_loop(rounds) != rounds) {
			fprintf(stderr, "wall_calls: an allocation failed\n");
			return 1;
		}
		return 0;
	}
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
