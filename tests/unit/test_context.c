/* Span context and endpoint counts (collect/context.c): counts per endpoint
 * taken once, a fork child's reset (the parent's counts go, the surviving
 * thread keeps its own context, another thread's slot is freed). */
#define _GNU_SOURCE
#include "check.h"
#include "collect/context.h"

#include <pthread.h>
#include <string.h>

struct seen {
	char names[8][CONTEXT_ENDPOINT_MAX];
	uint64_t counts[8];
	int n;
};

static void collect(void *ctx, const char *name, uint64_t count)
{
	struct seen *s = ctx;
	if (s->n < 8) {
		snprintf(s->names[s->n], sizeof(s->names[0]), "%s", name);
		s->counts[s->n++] = count;
	}
}

static uint64_t count_of(const struct seen *s, const char *name)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			return s->counts[i];
	return 0;
}

static void test_endpoint_counts(void)
{
	CHECK(context_set_endpoint("GET /a") == 0);
	CHECK(context_set_endpoint("GET /a") == 0);
	CHECK(context_set_endpoint("GET /b") == 0);
	struct seen s = { .n = 0 };
	CHECK_EQ_U64(context_endpoint_counts_take(collect, &s), 0);
	CHECK_EQ_U64(s.n, 2);
	CHECK_EQ_U64(count_of(&s, "GET /a"), 2);
	CHECK_EQ_U64(count_of(&s, "GET /b"), 1);
	struct seen again = { .n = 0 };
	(void)context_endpoint_counts_take(collect, &again);
	CHECK_EQ_U64(again.n, 0);
	CHECK(context_set_endpoint("GET /b") == 0);
	(void)context_endpoint_counts_take(collect, &again);
	CHECK_EQ_U64(again.n, 1);
	CHECK_EQ_U64(count_of(&again, "GET /b"), 1);
	CHECK(context_clear() == 0);
}

static void *other_thread(void *arg)
{
	(void)arg;
	(void)context_set_span(7, 8);
	return NULL;
}

static void test_after_fork_child(void)
{
	pthread_t t;
	CHECK(pthread_create(&t, NULL, other_thread, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(context_set_span(11, 12) == 0);
	CHECK(context_set_endpoint("GET /parent") == 0);
	context_after_fork_child();
	struct seen s = { .n = 0 };
	(void)context_endpoint_counts_take(collect, &s);
	CHECK_EQ_U64(s.n, 0); /* counted in the parent's profiles */
	struct context_value v;
	CHECK(context_read_self(&v));
	CHECK_EQ_U64(v.local_root_span_id, 11);
	CHECK_EQ_U64(v.span_id, 12);
	/* Counting starts again in the child. */
	CHECK(context_set_endpoint("GET /child") == 0);
	(void)context_endpoint_counts_take(collect, &s);
	CHECK_EQ_U64(s.n, 1);
	CHECK_EQ_U64(count_of(&s, "GET /child"), 1);
	CHECK(context_clear() == 0);
}

int main(void)
{
	RUN(test_endpoint_counts);
	RUN(test_after_fork_child);
	return CHECK_DONE();
}
