/* A program that publishes OpenTelemetry thread context (OTEP 4947) and
 * never calls stowaway's API.  Several threads switch spans quickly; span k
 * of thread t burns CPU in burn_even or burn_odd by the parity of k (and
 * spans with k % 4 == 3 also sleep in sleep_in_span) and allocates in
 * alloc_in_span, with the record
 * published for exactly that time; between spans the pointer is NULL and
 * the thread burns in burn_gap and allocates in alloc_in_gap.  Every span's ids and the CPU and sleep time
 * it really took are written to the file named by argv[2], one line each:
 *   span <span id> <trace id hex> <cpu ns> <sleep ns>
 * and each thread's whole CPU time: thread <index> <cpu ns>
 * The trace id is a function of the span id (trace_of), so a sample whose
 * ids do not match was read from a torn record.
 *
 * With OTEL_WRITER_API=1 in the environment, thread 0 also sets each span
 * through stowaway's API (local root span 1, span id = the span's index + 1),
 * which must win over the OpenTelemetry record.
 *
 * The program also publishes an OpenTelemetry process context (OTEP 4719)
 * whose key map names attribute 0 "http.route" and 1 "worker"; span k of
 * thread t carries http.route = "/r<k % 3>" and worker = "w<t>".
 *
 * Usage: otel_writer SECONDS TRUTH_FILE [THREADS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "otel_writer.h"

static uint64_t now_ns_realtime(void) { return otel_now_ns(CLOCK_REALTIME); }

/* Weak: the same binary runs without the library. */
int stowaway_set_span(uint64_t local_root_span_id, uint64_t span_id);
int stowaway_clear_context(void);
#pragma weak stowaway_set_span
#pragma weak stowaway_clear_context

#ifndef OTEL_CTX_IN_LIB
__attribute__((visibility("default"))) __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;
#endif

#define MAX_THREADS 8
#define MAX_SPANS 20000

struct span_truth {
	uint64_t span_id;
	uint64_t cpu_ns, sleep_ns;
};

struct worker {
	pthread_t th;
	int index;
	int use_api;
	double seconds;
	int n;
	uint64_t cpu_ns; /* the thread's whole CPU time */
	struct span_truth *spans;
	/* Two records used in turn: a reader holding a stale pointer would see
	 * the next span's bytes, which the test would catch. */
	struct otel_thread_ctx_record rec[2];
};

volatile uint64_t otel_sink;

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void trace_of(uint64_t span, uint8_t out[16])
{
	uint64_t hi = mix(span), lo = mix(span ^ 0x5555555555555555ull);
	for (int i = 0; i < 8; i++) {
		out[i] = (uint8_t)(hi >> (56 - 8 * i));
		out[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
	}
}

/* Distinct bodies (distinct constants) so the compiler cannot fold them. */
OTEL_DEFINE_BURN(burn_even, 6364136223846793005ull, 1442695040888963407ull)
OTEL_DEFINE_BURN(burn_odd, 2862933555777941757ull, 3037000493ull)
OTEL_DEFINE_BURN(burn_gap, 3202034522624059733ull, 4354685564936845319ull)
/* Allocations inside a span and in the gap, so allocation samples can be
 * checked too. */
__attribute__((noinline, noipa)) static void alloc_in_span(size_t n)
{
	char *volatile p = malloc(n);
	if (p)
		p[n / 2] = 1;
	free(p);
}

__attribute__((noinline, noipa)) static void alloc_in_gap(size_t n)
{
	char *volatile p = malloc(n);
	if (p)
		p[n / 3] = 2;
	free(p);
}

__attribute__((noinline, noipa)) static void sleep_in_span(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	nanosleep(&ts, NULL);
}

/* ---- the process context (OTEP 4719), protobuf written by hand ---- */

static size_t put_len(uint8_t *out, uint32_t field, const void *p, size_t n)
{
	out[0] = (uint8_t)(field << 3 | 2);
	out[1] = (uint8_t)n; /* every length here is below 128 */
	memcpy(out + 2, p, n);
	return n + 2;
}

/* KeyValue{key, AnyValue{string_value}} */
static size_t put_string_kv(uint8_t *out, const char *key, const char *value)
{
	uint8_t any[128], kv[256];
	size_t a = put_len(any, 1, value, strlen(value));
	size_t k = put_len(kv, 1, key, strlen(key));
	k += put_len(kv + k, 2, any, a);
	return put_len(out, 1, kv, k);
}

static void publish_process_context(void)
{
	static uint8_t payload[512];
	size_t n = 0;
	n += put_string_kv(payload + n, "service.name", "otel_writer");
	n += put_string_kv(payload + n, "threadlocal.schema_version", "tlsdesc_v1_dev");
	/* threadlocal.attribute_key_map = array_value [ "http.route", "worker" ] */
	uint8_t s0[32], s1[32], array[96], any[128], kv[192];
	size_t l0 = put_len(s0, 1, "http.route", 10), l1 = put_len(s1, 1, "worker", 6);
	size_t al = put_len(array, 1, s0, l0);
	al += put_len(array + al, 1, s1, l1);
	size_t anyl = put_len(any, 5, array, al);
	size_t kvl = put_len(kv, 1, "threadlocal.attribute_key_map", 29);
	kvl += put_len(kv + kvl, 2, any, anyl);
	n += put_len(payload + n, 1, kv, kvl);

	size_t page = 4096, len = 2 * page;
	uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;
	madvise(m, len, MADV_DONTFORK);
	uint32_t version = 2, size = (uint32_t)n;
	uint64_t published = now_ns_realtime();
	uint64_t ptr = (uint64_t)(uintptr_t)payload;
	memcpy(m + 8, &version, 4);
	memcpy(m + 12, &published, 8);
	memcpy(m + 20, &size, 4);
	memcpy(m + 24, &ptr, 8);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(m, "OTEL_CTX", 8);
	mprotect(m, len, PROT_READ);
	prctl(0x53564d41 /* PR_SET_VMA */, 0 /* PR_SET_VMA_ANON_NAME */, (unsigned long)m, len,
	      (unsigned long)"OTEL_CTX");
}

/* The record's attributes: key 0 http.route, key 1 worker. */
static uint16_t put_attrs(uint8_t *out, uint64_t span)
{
	char route[16], worker[16];
	snprintf(route, sizeof(route), "/r%d", (int)(((span & 0xffffffffffull) - 1) % 3));
	snprintf(worker, sizeof(worker), "w%d", (int)((span >> 40) - 1));
	size_t n = 0;
	out[n++] = 0;
	out[n++] = (uint8_t)strlen(route);
	memcpy(out + n, route, strlen(route));
	n += strlen(route);
	out[n++] = 1;
	out[n++] = (uint8_t)strlen(worker);
	memcpy(out + n, worker, strlen(worker));
	n += strlen(worker);
	return (uint16_t)n;
}

/* The OTEP's publication protocol: detach, build, mark valid, attach. */
static void attach(struct otel_thread_ctx_record *r, uint64_t span)
{
	otel_thread_ctx_v1 = NULL;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	r->valid = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	trace_of(span, r->trace_id);
	for (int i = 0; i < 8; i++)
		r->span_id[i] = (uint8_t)(span >> (56 - 8 * i));
	r->attrs_data_size = put_attrs(r->attrs_data, span);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	r->valid = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = r;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void detach(void)
{
	otel_thread_ctx_v1 = NULL;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t end = otel_now_ns(CLOCK_MONOTONIC) + (uint64_t)(w->seconds * 1e9);
	/* Span lengths cycle through 0.3, 0.7, 1.1 and 1.9 ms of CPU. */
	static const uint64_t cpu_us[4] = { 300, 700, 1100, 1900 };
	for (int k = 0; k < MAX_SPANS && otel_now_ns(CLOCK_MONOTONIC) < end; k++) {
		uint64_t span = ((uint64_t)(w->index + 1) << 40) | (uint64_t)(k + 1);
		uint64_t c0 = otel_now_ns(CLOCK_THREAD_CPUTIME_ID), m0 = otel_now_ns(CLOCK_MONOTONIC);
		attach(&w->rec[k & 1], span);
		if (w->use_api && stowaway_set_span)
			stowaway_set_span(1, (uint64_t)(k + 1));
		uint64_t until = c0 + cpu_us[(k / 2) % 4] * 1000ull;
		alloc_in_span(32768);
		if (k & 1)
			burn_odd(until);
		else
			burn_even(until);
		uint64_t s0 = otel_now_ns(CLOCK_MONOTONIC);
		if (k % 4 == 3)
			sleep_in_span(1500000);
		uint64_t s1 = otel_now_ns(CLOCK_MONOTONIC);
		detach();
		if (w->use_api && stowaway_clear_context)
			stowaway_clear_context();
		uint64_t c1 = otel_now_ns(CLOCK_THREAD_CPUTIME_ID);
		(void)m0;
		w->spans[w->n++] = (struct span_truth){ span, c1 - c0, s1 - s0 };
		alloc_in_gap(8192);
		burn_gap(c1 + 200000);
	}
	w->cpu_ns = otel_now_ns(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SECONDS TRUTH_FILE [THREADS]\n", argv[0]);
		return 2;
	}
	double seconds = atof(argv[1]);
	int threads = argc > 3 ? atoi(argv[3]) : 4;
	if (threads < 1 || threads > MAX_THREADS)
		threads = 4;
	publish_process_context();
	static struct worker ws[MAX_THREADS];
	for (int i = 0; i < threads; i++) {
		ws[i].index = i;
		ws[i].use_api = i == 0 && getenv("OTEL_WRITER_API") && atoi(getenv("OTEL_WRITER_API")) == 1;
		ws[i].seconds = seconds;
		ws[i].spans = calloc(MAX_SPANS, sizeof(struct span_truth));
		if (!ws[i].spans || pthread_create(&ws[i].th, NULL, work, &ws[i]) != 0)
			return 1;
	}
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 1;
	for (int i = 0; i < threads; i++) {
		pthread_join(ws[i].th, NULL);
		fprintf(f, "thread %d %llu\n", i, (unsigned long long)ws[i].cpu_ns);
		for (int k = 0; k < ws[i].n; k++) {
			uint8_t t[16];
			trace_of(ws[i].spans[k].span_id, t);
			fprintf(f, "span %llu ", (unsigned long long)ws[i].spans[k].span_id);
			for (int b = 0; b < 16; b++)
				fprintf(f, "%02x", t[b]);
			fprintf(f, " %llu %llu\n", (unsigned long long)ws[i].spans[k].cpu_ns,
				(unsigned long long)ws[i].spans[k].sleep_ns);
		}
	}
	fclose(f);
	printf("threads=%d\n", threads);
	return 0;
}
