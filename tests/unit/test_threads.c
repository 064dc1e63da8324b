/* The thread registry (collect/threads.c): lookups across freed slots, the
 * bitmap of slots in use, and a reset that writes only those slots (so a
 * fork child leaves the rest of the table shared with its parent). */
#include <string.h>

#include "collect/threads.h"
#include "unit/check.h"

#define HOME_OF(tid) (((uint32_t)(tid) * 2654435761u) % THREADS_MAX)

/* n tids whose home slot is `home`, searched from `from` on. */
static void colliding_tids(uint32_t home, int from, int *out, int n)
{
	int k = 0;
	for (int tid = from; k < n && tid < from + 100000000; tid++)
		if (HOME_OF(tid) == home)
			out[k++] = tid;
	CHECK(k == n);
}

static int count_used(void)
{
	int n = 0;
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1))
		n++;
	return n;
}

static void find_crosses_freed_slots(void)
{
	threads_reset();
	int tids[6];
	colliding_tids(HOME_OF(1000), 1000, tids, 6);
	int slots[6];
	for (int i = 0; i < 6; i++) {
		slots[i] = threads_register(tids[i], false, 0, 0);
		CHECK(slots[i] >= 0);
	}
	/* One chain: consecutive slots from the shared home. */
	for (int i = 1; i < 6; i++)
		CHECK_EQ_U64((uint32_t)slots[i], ((uint32_t)slots[0] + (uint32_t)i) % THREADS_MAX);
	CHECK_EQ_U64(count_used(), 6);
	/* Freeing the middle of the chain keeps the rest findable. */
	threads_unregister(slots[1], tids[1]);
	threads_unregister(slots[2], tids[2]);
	CHECK(threads_find(tids[1]) < 0);
	CHECK_EQ_U64(threads_find(tids[5]), slots[5]);
	CHECK_EQ_U64(threads_find(tids[3]), slots[3]);
	CHECK_EQ_U64(count_used(), 6); /* freed slots stay marked */
	/* A new tid of the same home takes the first freed slot. */
	int more[1];
	colliding_tids(HOME_OF(tids[0]), tids[5] + 1, more, 1);
	CHECK_EQ_U64(HOME_OF(more[0]), HOME_OF(tids[0]));
	CHECK_EQ_U64(threads_register(more[0], false, 0, 0), slots[1]);
	CHECK_EQ_U64(threads_find(more[0]), slots[1]);
	CHECK_EQ_U64(count_used(), 6);
}

static void reset_writes_only_used_slots(void)
{
	threads_reset();
	int a = threads_register(4242, false, 0, 0);
	int b = threads_register(4343, false, 0, 0);
	CHECK(a >= 0 && b >= 0);
	CHECK_EQ_U64(count_used(), 2);
	/* A slot never used keeps its zero bytes through a reset. */
	int untouched = (a + THREADS_MAX / 2) % THREADS_MAX;
	if (untouched == b)
		untouched = (untouched + 1) % THREADS_MAX;
	struct thread_slot zero;
	memset(&zero, 0, sizeof(zero));
	CHECK(memcmp(&thread_slots[untouched], &zero, sizeof(zero)) == 0);
	threads_reset();
	CHECK(memcmp(&thread_slots[untouched], &zero, sizeof(zero)) == 0);
	CHECK_EQ_U64(count_used(), 0);
	CHECK_EQ_U64(atomic_load(&thread_slots[a].tid), 0);
	CHECK_EQ_U64((uint32_t)atomic_load(&thread_slots[a].timer_id), (uint32_t)-1);
	CHECK(threads_find(4242) < 0 && threads_find(4343) < 0);
}

static void bitmap_next_walks_set_bits(void)
{
	atomic_ullong words[3];
	for (int i = 0; i < 3; i++)
		atomic_init(&words[i], 0);
	CHECK_EQ_U64((uint32_t)rt_bitmap_next(words, 3, 0), (uint32_t)-1);
	atomic_store(&words[0], 1ull << 5);
	atomic_store(&words[2], (1ull << 0) | (1ull << 63));
	CHECK_EQ_U64(rt_bitmap_next(words, 3, 0), 5);
	CHECK_EQ_U64(rt_bitmap_next(words, 3, 5), 5);
	CHECK_EQ_U64(rt_bitmap_next(words, 3, 6), 128);
	CHECK_EQ_U64(rt_bitmap_next(words, 3, 129), 191);
	CHECK_EQ_U64((uint32_t)rt_bitmap_next(words, 3, 192), (uint32_t)-1);
	CHECK_EQ_U64(rt_bitmap_next(words, 3, -4), 5);
}

int main(void)
{
	RUN(find_crosses_freed_slots);
	RUN(reset_writes_only_used_slots);
	RUN(bitmap_next_walks_set_bits);
	return CHECK_DONE();
}
