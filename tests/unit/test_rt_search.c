/* rt_upper_bound (rt/search.h) against a linear count, on tables of every
 * size up to 40 with repeated keys, keys at offset 0 and inside the element,
 * and the extremes of uint64_t. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"
#include "rt/search.h"

struct range {
	uint32_t tag;
	uint64_t start, end;
};

static uint32_t linear(const struct range *t, uint32_t n, int by_end, uint64_t key)
{
	uint32_t c = 0;
	while (c < n && (by_end ? t[c].end : t[c].start) <= key)
		c++;
	return c;
}

static void test_upper_bound_matches_linear_count(void)
{
	struct range t[40];
	uint64_t u[40];
	for (uint32_t n = 0; n <= 40; n++) {
		for (uint32_t i = 0; i < n; i++) {
			t[i].tag = i;
			t[i].start = 10 * (uint64_t)(i / 2); /* pairs of equal starts */
			t[i].end = t[i].start + 5;
			u[i] = i + 1 == 40 ? UINT64_MAX : 3 * (uint64_t)i;
		}
		for (uint64_t key = 0; key < 220; key++) {
			CHECK_EQ_U64(rt_upper_bound(t, n, sizeof(t[0]), offsetof(struct range, start), key),
				     linear(t, n, 0, key));
			CHECK_EQ_U64(rt_upper_bound(t, n, sizeof(t[0]), offsetof(struct range, end), key),
				     linear(t, n, 1, key));
			uint32_t want = 0;
			while (want < n && u[want] <= key)
				want++;
			CHECK_EQ_U64(rt_upper_bound(u, n, sizeof(u[0]), 0, key), want);
		}
	}
}

static void test_upper_bound_extremes(void)
{
	uint64_t u[2] = {0, UINT64_MAX};
	CHECK_EQ_U64(rt_upper_bound(u, 2, sizeof(u[0]), 0, UINT64_MAX), 2);
	CHECK_EQ_U64(rt_upper_bound(u, 2, sizeof(u[0]), 0, 0), 1);
	CHECK_EQ_U64(rt_upper_bound(u, 1, sizeof(u[0]), 0, 0), 1);
	CHECK_EQ_U64(rt_upper_bound(NULL, 0, sizeof(u[0]), 0, 7), 0);
}

int main(void)
{
	RUN(test_upper_bound_matches_linear_count);
	RUN(test_upper_bound_extremes);
	return CHECK_DONE();
}
