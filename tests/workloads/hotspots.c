/* Code-hotspots workload: 4 threads serve fake requests of three kinds; each
 * request is tagged with stowaway_set_span / _set_endpoint / _set_label and
 * burns CPU and allocates in its kind's function (work_checkout, work_search,
 * work_login).
 * Between requests the thread clears its context and idles in idle_spin().
 * The API is declared weak: the same binary runs without the library.
 * Prints "request <root> <span> <kind>" per request and "api=<yes|no>".
 * With HOTSPOTS_RUNTIME_ID set, adopts it with stowaway_set_runtime_id. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "stowaway.h"
#pragma weak stowaway_set_span
#pragma weak stowaway_set_endpoint
#pragma weak stowaway_set_label
#pragma weak stowaway_clear_context
#pragma weak stowaway_runtime_id
#pragma weak stowaway_set_runtime_id

static volatile uint64_t sink;
/* Blocks escape through here, so the compiler keeps malloc and free. */
static char *volatile escape;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define WORK(name, k)                                                           \
	__attribute__((noinline)) static void name(double seconds)              \
	{                                                                       \
		double end = now_s() + seconds;                                 \
		uint64_t h = sink;                                              \
		while (now_s() < end) {                                         \
			char *block = malloc(16384);                            \
			block[0] = (char)h;                                     \
			escape = block;                                         \
			for (int i = 0; i < 20000; i++)                         \
				h = (h ^ (uint64_t)i) * 0x100000001b3ull + (k);  \
			h += (uint64_t)block[0];                                \
			free(block);                                            \
		}                                                               \
		sink = h;                                                       \
	}
WORK(work_checkout, 1)
WORK(work_search, 2)
WORK(work_login, 3)
WORK(idle_spin, 4)

/* A request also waits for a "backend": wall-clock samples of the wait
 * carry the request's context too. */
__attribute__((noinline)) static void wait_backend(double seconds)
{
	struct timespec ts = { 0, (long)(seconds * 1e9) };
	nanosleep(&ts, NULL);
}

static const char *const kinds[3] = { "checkout", "search", "login" };
static const char *const endpoints[3] = { "POST /checkout", "GET /search", "POST /login" };
static void (*const work[3])(double) = { work_checkout, work_search, work_login };
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static double seconds_per_request = 0.05;
static int requests_per_thread = 12;

static void *server(void *arg)
{
	int id = (int)(intptr_t)arg;
	for (int r = 0; r < requests_per_thread; r++) {
		int kind = (id + r) % 3;
		/* Ids encode the request: root = 1000*(thread+1) + r, span = root*10 + kind. */
		uint64_t root = 1000u * (uint64_t)(id + 1) + (uint64_t)r, span = root * 10 + (uint64_t)kind;
		if (stowaway_set_span) {
			stowaway_set_span(root, span);
			stowaway_set_endpoint(endpoints[kind]);
			stowaway_set_label("customer", kind == 0 ? "acme" : "globex");
		}
		work[kind](seconds_per_request);
		wait_backend(seconds_per_request / 2);
		if (stowaway_clear_context)
			stowaway_clear_context();
		pthread_mutex_lock(&out_lock);
		printf("request %llu %llu %s\n", (unsigned long long)root, (unsigned long long)span,
		       kinds[kind]);
		pthread_mutex_unlock(&out_lock);
		idle_spin(seconds_per_request / 5);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		requests_per_thread = atoi(argv[1]);
	/* A tracer that owns the runtime id hands it over. */
	const char *adopt = getenv("HOTSPOTS_RUNTIME_ID");
	if (adopt && stowaway_set_runtime_id)
		printf("set_runtime_id=%d\n", stowaway_set_runtime_id(adopt));
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, server, (void *)(intptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	char id[64] = "";
	int r = stowaway_runtime_id ? stowaway_runtime_id(id, sizeof(id)) : -1;
	printf("api=%s runtime_id=%s\n", stowaway_set_span ? "yes" : "no", r == 0 ? id : "-");
	return 0;
}
