/* dlopen/dlclose churn under a 1000 Hz CPU sampler: THREADS threads each
 * loop ROUNDS times over dlopen(LIB), calls into it for about a millisecond
 * of CPU, then dlclose.  The handles share one reference count, so the
 * library is unmapped whenever the last thread closes it while the others
 * may be about to open it again; no thread ever runs in it after its own
 * dlclose (well-defined), but the samplers see it come and go constantly.
 * Usage: hazard_dlopen LIB THREADS ROUNDS */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef uint64_t (*spin_fn)(uint64_t, uint64_t);

static const char *lib_path;
static long rounds;

static void *churn(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	for (long i = 0; i < rounds; i++) {
		void *h = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return (void *)1;
		}
		spin_fn spin = (spin_fn)dlsym(h, "hazard_dlib_spin");
		if (!spin || (spin(200000, id + (uint64_t)i) & 1) != 1) {
			fprintf(stderr, "dlsym or call failed\n");
			return (void *)1;
		}
		if (dlclose(h) != 0) {
			fprintf(stderr, "dlclose: %s\n", dlerror());
			return (void *)1;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s LIB THREADS ROUNDS\n", argv[0]);
		return 2;
	}
	lib_path = argv[1];
	int n = atoi(argv[2]);
	rounds = atol(argv[3]);
	pthread_t t[16];
	if (n < 1 || n > 16)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)i) != 0)
			return 3;
	int bad = 0;
	for (int i = 0; i < n; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad |= r != NULL;
	}
	printf("dlopen threads=%d rounds=%ld %s\n", n, rounds, bad ? "FAILED" : "ok");
	return bad;
}
