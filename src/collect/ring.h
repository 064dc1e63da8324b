/* A ring of fixed-size records that signal handlers fill and one thread
 * drains (the CPU and wall samplers).  Every record starts with struct
 * ring_head.  A record moves empty -> writing (a handler reserved it) ->
 * ready (published) -> empty (drained); a full ring makes reserve fail, and
 * the caller keeps the sample's weight for the thread's next sample. */
#ifndef STOWAWAY_COLLECT_RING_H
#define STOWAWAY_COLLECT_RING_H

#include "rt/rt.h"

struct ring_head {
	atomic_int state;
};

struct sample_ring {
	uint8_t *mem;        /* NULL until ring_init */
	size_t record_size;  /* bytes per record, cache-line multiple */
	uint32_t records;
	atomic_uint next;    /* where the next reservation starts looking */
	atomic_uint ready;   /* records published and not yet drained */
	atomic_uint in_use;  /* records reserved and not yet released */
};

/* Allocates `records` records of at least record_bytes each, once; a later
 * call keeps the memory.  0 or -ENOMEM.  Not signal-safe. */
int ring_init(struct sample_ring *r, uint32_t records, size_t record_bytes);
/* A record to fill, or NULL when the ring is full.  [signal-safe] */
void *ring_reserve(struct sample_ring *r);
/* Hands a filled record to the draining thread.  [signal-safe] */
void ring_publish(struct sample_ring *r, void *record);
/* Draining thread: the next ready record at or after *cursor (advanced past
 * it), NULL when there is none; give it back with ring_release. */
void *ring_next_ready(struct sample_ring *r, uint32_t *cursor);
void ring_release(struct sample_ring *r, void *record);
bool ring_has_ready(struct sample_ring *r);
/* In a fork child: the parent's records are dropped. */
void ring_clear(struct sample_ring *r);

#endif
