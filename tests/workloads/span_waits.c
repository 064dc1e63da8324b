/* Short requests that wait: 4 threads each set a span, block in nanosleep
 * for WAIT_US microseconds, clear their context and run a little code, over
 * and over for SECONDS.  At a high wall rate the sampler often finds a
 * thread in the wait just as it leaves it and clears its span: a sample of
 * the wait must still carry the span it was taken under.
 * Usage: span_waits SECONDS WAIT_US */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stowaway.h"
#pragma weak stowaway_set_span
#pragma weak stowaway_clear_context

static volatile uint64_t sink;
static double seconds = 2.0;
static long wait_ns = 50000;

__attribute__((noinline)) static void wait_backend(void)
{
	struct timespec ts = { 0, wait_ns };
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void between_requests(void)
{
	for (int i = 0; i < 2000; i++)
		sink += (uint64_t)i;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *server(void *arg)
{
	uint64_t root = 1000u + (uint64_t)(uintptr_t)arg;
	double end = now_s() + seconds;
	for (uint64_t r = 1; now_s() < end; r++) {
		if (stowaway_set_span)
			stowaway_set_span(root, root * 1000000u + r);
		wait_backend();
		if (stowaway_clear_context)
			stowaway_clear_context();
		between_requests();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		wait_ns = atol(argv[2]) * 1000;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, server, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("api=%s\n", stowaway_set_span ? "yes" : "no");
	return 0;
}
