// Benchmark driver: a throw/catch loop.  Prints "ns_per_throw <value>"
// measured on the thread CPU clock (stable on a busy machine).
// Usage: exception_bench [iterations]
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <stdexcept>

static volatile int sink;

__attribute__((noinline)) static void fail(int i) { throw std::runtime_error(i ? "x" : "y"); }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	struct timespec t0, t1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	for (long i = 0; i < n; i++) {
		try {
			fail((int)(i & 1));
		} catch (const std::exception &) {
			sink = sink + 1;
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("ns_per_throw %.1f\n", ns / n);
	return 0;
}
