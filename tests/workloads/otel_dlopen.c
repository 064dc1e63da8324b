/* OpenTelemetry thread context published by a library loaded with dlopen
 * after the profiler started (argv[1]: its path).  Two threads started after
 * the dlopen switch spans like otel_writer (span k burns in burn_even or
 * burn_odd by parity, ids as otel_writer's) through the library's slot; the
 * program also dlopens and closes another library a few times, so the
 * profiler looks for the variable again; after each successful dlopen
 * dlerror() must have nothing to say (exit 3 otherwise).  Prints "static" or "dynamic":
 * whether the slot of the threads lies within 64 KiB of their thread
 * pointer (static TLS) or not.
 *
 * Usage: otel_dlopen LIBRARY SECONDS */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "otel_writer.h"

static struct otel_thread_ctx_record **(*slot_of_thread)(void);
static double seconds;
volatile uint64_t otel_sink;
static volatile int placement_static = -1;

OTEL_DEFINE_BURN(burn_even, 6364136223846793005ull, 1442695040888963407ull)
OTEL_DEFINE_BURN(burn_odd, 2862933555777941757ull, 3037000493ull)
static void *work(void *arg)
{
	uint64_t index = (uint64_t)(uintptr_t)arg;
	struct otel_thread_ctx_record **slot = slot_of_thread();
	uintptr_t tp;
	__asm__("mov %%fs:0, %0" : "=r"(tp));
	intptr_t d = (intptr_t)((uintptr_t)slot - tp);
	placement_static = d > -65536 && d < 65536;
	static __thread struct otel_thread_ctx_record rec[2];
	uint64_t end = otel_now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	for (uint64_t k = 0; otel_now_ns(CLOCK_MONOTONIC) < end; k++) {
		uint64_t span = ((index + 1) << 40) | (k + 1);
		struct otel_thread_ctx_record *r = &rec[k & 1];
		*slot = NULL;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		r->valid = 0;
		for (int i = 0; i < 16; i++)
			r->trace_id[i] = (uint8_t)(span >> (i % 8));
		for (int i = 0; i < 8; i++)
			r->span_id[i] = (uint8_t)(span >> (56 - 8 * i));
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		r->valid = 1;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		*slot = r;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		uint64_t until = otel_now_ns(CLOCK_THREAD_CPUTIME_ID) + 800000;
		if (k & 1)
			burn_odd(until);
		else
			burn_even(until);
		*slot = NULL;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	seconds = atof(argv[2]);
	(void)dlerror(); /* whatever was said before (e.g. a hook's dlsym) */
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	/* A successful dlopen leaves no error for dlerror(), with or without a
	 * profiler looking into the library. */
	const char *err = dlerror();
	if (err) {
		fprintf(stderr, "dlerror after a successful dlopen: %s\n", err);
		return 3;
	}
	slot_of_thread = (struct otel_thread_ctx_record * *(*)(void)) dlsym(h, "otel_ctx_lib_slot");
	if (!slot_of_thread)
		return 1;
	pthread_t th[2];
	for (uintptr_t i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, work, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 3; i++) {
		void *m = dlopen("libm.so.6", RTLD_NOW);
		if (!m) {
			(void)dlerror();
			m = dlopen("libc.so", RTLD_NOW);
		}
		if (m && dlerror()) {
			fprintf(stderr, "dlerror after a successful dlopen\n");
			return 3;
		}
		if (m)
			dlclose(m);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("%s\n", placement_static == 1 ? "static" : "dynamic");
	return 0;
}
