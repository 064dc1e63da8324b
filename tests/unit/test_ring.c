/* The signal handlers' sample ring (collect/ring.h): records go empty ->
 * writing -> ready -> empty, a full ring refuses, a drained ring is reused
 * from its first record, and a fork child's clear finds the records in use. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "collect/ring.h"
#include "unit/check.h"

#define RECORDS 64u

struct rec {
	struct ring_head head;
	uint32_t value;
};

static uint32_t index_of(const struct sample_ring *r, const void *p)
{
	return (uint32_t)(((const uint8_t *)p - r->mem) / r->record_size);
}

/* Publishes n records holding base, base + 1, ...; their indexes into at. */
static uint32_t fill(struct sample_ring *r, uint32_t n, uint32_t base, uint32_t *at)
{
	uint32_t made = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct rec *x = ring_reserve(r);
		if (x == NULL)
			break;
		x->value = base + i;
		if (at != NULL)
			at[i] = index_of(r, x);
		ring_publish(r, x);
		made++;
	}
	return made;
}

/* Drains every ready record; their values summed into *sum. */
static uint32_t drain(struct sample_ring *r, uint64_t *sum)
{
	uint32_t cursor = 0, n = 0;
	for (struct rec *x; (x = ring_next_ready(r, &cursor)) != NULL; n++) {
		*sum += x->value;
		ring_release(r, x);
	}
	return n;
}

/* Each record comes back once with what was written in it; the ring
 * holds at most its size, and refuses then. */
static void test_records_round_trip(void)
{
	static struct sample_ring r;
	CHECK(ring_init(&r, RECORDS, sizeof(struct rec)) == 0);
	CHECK(r.record_size % 64 == 0);
	CHECK(!ring_has_ready(&r));
	CHECK(fill(&r, 10, 100, NULL) == 10);
	CHECK(ring_has_ready(&r));
	uint64_t sum = 0;
	CHECK(drain(&r, &sum) == 10);
	CHECK(sum == 10 * 100 + 45);
	CHECK(!ring_has_ready(&r));
	CHECK(fill(&r, RECORDS + 5, 0, NULL) == RECORDS);
	CHECK(ring_reserve(&r) == NULL);
	sum = 0;
	CHECK(drain(&r, &sum) == RECORDS);
	CHECK(atomic_load(&r.in_use) == 0);
}

/* Once drained, reservations start at the first record again: rounds of a
 * few samples each touch the same few records, not the whole ring in turn
 * (each new page a fault, and a fork child's own copy). */
static void test_drained_ring_reused_from_start(void)
{
	static struct sample_ring r;
	CHECK(ring_init(&r, RECORDS, sizeof(struct rec)) == 0);
	uint32_t highest = 0;
	for (uint32_t round = 0; round < 50; round++) {
		uint32_t at[3];
		CHECK(fill(&r, 3, round, at) == 3);
		for (uint32_t i = 0; i < 3; i++)
			highest = at[i] > highest ? at[i] : highest;
		uint64_t sum = 0;
		CHECK(drain(&r, &sum) == 3);
		CHECK(sum == 3ull * round + 3);
	}
	printf("  150 records in rounds of 3: highest index used %u of %u\n", highest, RECORDS);
	CHECK(highest == 2);
}

/* A child's clear empties the records left in use, ready or being written,
 * wherever the reservations had got to. */
static void test_clear_finds_records_in_use(void)
{
	static struct sample_ring r;
	CHECK(ring_init(&r, RECORDS, sizeof(struct rec)) == 0);
	/* Wrap the reservations past the end first. */
	CHECK(fill(&r, RECORDS - 2, 0, NULL) == RECORDS - 2);
	struct rec *held = ring_reserve(&r); /* stays in use while the rest drain */
	CHECK(held != NULL);
	uint64_t sum = 0;
	CHECK(drain(&r, &sum) == RECORDS - 2);
	CHECK(fill(&r, 6, 0, NULL) == 6);
	struct rec *writing = ring_reserve(&r);
	CHECK(writing != NULL);
	CHECK(atomic_load(&r.in_use) == 8);
	ring_clear(&r);
	CHECK(atomic_load(&r.in_use) == 0 && !ring_has_ready(&r));
	uint32_t in_use = 0;
	for (uint32_t i = 0; i < RECORDS; i++) {
		const struct ring_head *h = (const void *)(r.mem + (size_t)i * r.record_size);
		in_use += atomic_load(&h->state) != 0;
	}
	CHECK(in_use == 0);
	CHECK(fill(&r, RECORDS, 0, NULL) == RECORDS);
}

int main(void)
{
	RUN(test_records_round_trip);
	RUN(test_drained_ring_reused_from_start);
	RUN(test_clear_finds_records_in_use);
	return CHECK_DONE();
}
