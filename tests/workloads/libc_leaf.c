/* libc_leaf SECONDS: copies 256 KiB with memcpy in a loop for SECONDS, from
 * copy_loop, then prints "cpu_ns N" (its process CPU time).  musl's memcpy
 * (assembly) has no unwind tables and keeps no frame of its own, so a
 * profiler interrupting it must find copy_loop some other way
 * (tests/integration/libc_leaf.py).  On x86-64 every other copy goes through
 * copy_zero_fp, code without tables that calls memcpy with rbp zero, as
 * code built without frame pointers (musl's) often leaves it: a frame-pointer
 * step there ends as if at the thread's first frame, and must not be
 * believed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BYTES (256u << 10)

static long long ns_of(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#if defined(__x86_64__)
void *copy_zero_fp(void *dst, const void *src, size_t n);
__asm__(".text\n"
	".globl copy_zero_fp\n"
	".type copy_zero_fp, @function\n"
	"copy_zero_fp:\n"
	"\tpush %rbp\n"
	"\txor %ebp, %ebp\n"
	"\tcall memcpy@PLT\n"
	"\tpop %rbp\n"
	"\tret\n"
	".size copy_zero_fp, .-copy_zero_fp\n");
#define COPY_ODD copy_zero_fp
#else
#define COPY_ODD memcpy
#endif

__attribute__((noinline)) static unsigned copy_loop(char *dst, const char *src, size_t n, long long until)
{
	unsigned sum = 0;
	while (ns_of(CLOCK_MONOTONIC) < until)
		for (int i = 0; i < 16; i++) {
			if (i & 1)
				COPY_ODD(dst, src, n);
			else
				memcpy(dst, src, n);
			sum += (unsigned char)dst[i];
		}
	return sum;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	char *src = malloc(BYTES), *dst = malloc(BYTES);
	if (!src || !dst)
		return 1;
	memset(src, argc, BYTES);
	unsigned sum = copy_loop(dst, src, BYTES - (size_t)argc, ns_of(CLOCK_MONOTONIC) + (long long)(seconds * 1e9));
	printf("cpu_ns %lld sum %u\n", ns_of(CLOCK_PROCESS_CPUTIME_ID), sum);
	free(src);
	free(dst);
	return 0;
}
