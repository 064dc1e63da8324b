/* Small building blocks shared by the recorder and the pprof encoder:
 * 64-bit hashing, an open-addressing index table and array growth.
 *
 * The table maps a caller-computed hash to a caller-owned entry index; the
 * caller keeps the entries (so keys are never copied twice) and supplies the
 * equality test.  Entries are never deleted, so probing stops at the first
 * empty slot.  Load factor stays below 3/4.
 */
#ifndef STOWAWAY_PROFILE_HTAB_H
#define STOWAWAY_PROFILE_HTAB_H

#include "rt/rt.h"

#define SW_HTAB_NONE UINT32_MAX

struct sw_htab_slot {
	uint32_t hash;
	uint32_t idx_plus1; /* 0: empty */
};

struct sw_htab {
	struct sw_htab_slot *slots;
	uint32_t cap; /* power of two, or 0 before the first insert */
	uint32_t count;
};

/* Equality of the caller's key (ctx) and entry idx. */
typedef bool (*sw_htab_eq_fn)(const void *ctx, uint32_t idx);

/* Entry index whose key equals ctx, or SW_HTAB_NONE. */
uint32_t sw_htab_lookup(const struct sw_htab *t, uint32_t hash, sw_htab_eq_fn eq, const void *ctx);
/* Adds idx under hash (the key must be absent); grows the table as needed.
 * false when memory is exhausted (the table is unchanged). */
bool sw_htab_insert(struct sw_htab *t, uint32_t hash, uint32_t idx);
void sw_htab_free(struct sw_htab *t);

/* Makes *arr (an rt_malloc'ed array of *cap elements of elem_size bytes)
 * hold at least need elements, doubling; false on overflow or exhaustion
 * (the array is unchanged). */
bool sw_array_reserve(void **arr, uint32_t *cap, uint32_t need, size_t elem_size);

#endif
