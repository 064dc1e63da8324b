/* The C counterpart of inline_hot.cc (for musl hosts, which have no C++
 * runtime here): the time is spent in an always-inline helper inlined into
 * relax().  Usage: inline_hot_c CPU_SECONDS (process CPU time) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096

static inline __attribute__((always_inline)) float smooth(const float *v, int i)
{
	float a = v[(i + N - 1) % N], b = v[i], c = v[(i + 1) % N];
	float s = a * 0.25f + b * 0.5f + c * 0.25f;
	for (int k = 0; k < 16; k++)
		s = s * 0.999f + 0.001f * (s * s) - 0.0005f * (s * s * s);
	return s;
}

static __attribute__((noinline)) void relax(float *v, float *out, int rounds)
{
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < N; i++)
			out[i] = smooth(v, i);
		for (int i = 0; i < N; i++)
			v[i] = out[i];
	}
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static float data[N], out[N];
static volatile float sink;

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	for (int i = 0; i < N; i++)
		data[i] = (float)(i % 97) / 97.0f;
	do
		relax(data, out, 50);
	while (now() < seconds);
	sink = data[7];
	printf("%f\n", (double)sink);
	return 0;
}
