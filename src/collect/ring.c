/* The signal handlers' sample ring (see ring.h). */
#include "collect/ring.h"
#include "rt/sys.h"

#define RECORD_EMPTY 0
#define RECORD_WRITING 1
#define RECORD_READY 2
#define RESERVE_TRIES 4

static struct ring_head *record_at(const struct sample_ring *r, uint32_t i)
{
	return (struct ring_head *)(void *)(r->mem + (size_t)i * r->record_size);
}

int ring_init(struct sample_ring *r, uint32_t records, size_t record_bytes)
{
	if (r->mem)
		return 0;
	size_t size = (record_bytes + 63) & ~(size_t)63;
	uint8_t *mem = rt_pages_alloc(size * records);
	if (!mem)
		return -ENOMEM;
	r->record_size = size;
	r->records = records;
	r->mem = mem;
	return 0;
}

void *ring_reserve(struct sample_ring *r)
{
	if (!r->mem)
		return NULL;
	for (int tries = 0; tries < RESERVE_TRIES; tries++) {
		uint32_t i = atomic_fetch_add(&r->next, 1) % r->records;
		int expected = RECORD_EMPTY;
		if (atomic_compare_exchange_strong(&record_at(r, i)->state, &expected, RECORD_WRITING)) {
			atomic_fetch_add_explicit(&r->in_use, 1, memory_order_relaxed);
			return record_at(r, i);
		}
	}
	return NULL;
}

void ring_publish(struct sample_ring *r, void *record)
{
	struct ring_head *h = record;
	atomic_store_explicit(&h->state, RECORD_READY, memory_order_release);
	atomic_fetch_add_explicit(&r->ready, 1, memory_order_release);
}

bool ring_has_ready(struct sample_ring *r)
{
	return r->mem && atomic_load_explicit(&r->ready, memory_order_acquire) != 0;
}

void *ring_next_ready(struct sample_ring *r, uint32_t *cursor)
{
	/* Once every published record is drained, the rest of the ring (one
	 * record per page or so) is not walked for nothing. */
	if (atomic_load_explicit(&r->ready, memory_order_acquire) == 0)
		return NULL;
	for (; r->mem && *cursor < r->records; (*cursor)++) {
		struct ring_head *h = record_at(r, *cursor);
		if (atomic_load_explicit(&h->state, memory_order_acquire) == RECORD_READY) {
			(*cursor)++;
			return h;
		}
	}
	return NULL;
}

void ring_release(struct sample_ring *r, void *record)
{
	struct ring_head *h = record;
	atomic_store_explicit(&h->state, RECORD_EMPTY, memory_order_release);
	atomic_fetch_sub_explicit(&r->ready, 1, memory_order_relaxed);
	/* Drained: reservations start again at the first record, so a process
	 * touches only the pages its longest wait between drains fills, not the
	 * whole ring in turn (each page first written is a fault, and after a
	 * fork a page of the child's own).  `next` is only where reservations
	 * start looking: one racing with this store still claims its record by
	 * CAS. */
	if (atomic_fetch_sub_explicit(&r->in_use, 1, memory_order_relaxed) == 1)
		atomic_store_explicit(&r->next, 0, memory_order_relaxed);
}

void ring_clear(struct sample_ring *r)
{
	/* Only records in use are written (none are even read when the count
	 * says so): after a fork the others stay shared with the parent. */
	uint32_t left = atomic_load(&r->in_use);
	if (left == 0)
		return;
	/* Records are reserved in turn (from the first again once the ring
	 * drained), so those in use are the last ones reserved: walking back
	 * from the next one finds them without reading the whole ring (one
	 * record per page or so). */
	uint32_t next = atomic_load(&r->next);
	for (uint32_t k = 1; r->mem && k <= r->records && left > 0; k++) {
		struct ring_head *h = record_at(r, (next - k) % r->records);
		if (atomic_load(&h->state) != RECORD_EMPTY) {
			atomic_store(&h->state, RECORD_EMPTY);
			left--;
		}
	}
	atomic_store(&r->ready, 0);
	atomic_store(&r->in_use, 0);
}
