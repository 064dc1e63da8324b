/* Open-addressing index table, hashing and array growth (see htab.h). */
#include "profile/htab.h"

#define HTAB_MIN_CAP 16u
#define HTAB_MAX_CAP (1u << 30)

uint32_t sw_htab_lookup(const struct sw_htab *t, uint32_t hash, sw_htab_eq_fn eq, const void *ctx)
{
	if (t->cap == 0)
		return SW_HTAB_NONE;
	uint32_t mask = t->cap - 1;
	uint32_t pos = hash & mask;
	for (uint32_t probes = 0; probes < t->cap; probes++) {
		const struct sw_htab_slot *s = &t->slots[pos];
		if (s->idx_plus1 == 0)
			return SW_HTAB_NONE;
		if (s->hash == hash && eq(ctx, s->idx_plus1 - 1))
			return s->idx_plus1 - 1;
		pos = (pos + 1) & mask;
	}
	return SW_HTAB_NONE;
}

/* Places (hash, idx) in the first empty slot of a table known to have one. */
static void htab_place(struct sw_htab_slot *slots, uint32_t cap, uint32_t hash, uint32_t idx_plus1)
{
	uint32_t mask = cap - 1;
	uint32_t pos = hash & mask;
	for (uint32_t probes = 0; probes < cap; probes++) {
		if (slots[pos].idx_plus1 == 0) {
			slots[pos].hash = hash;
			slots[pos].idx_plus1 = idx_plus1;
			return;
		}
		pos = (pos + 1) & mask;
	}
}

static bool htab_grow(struct sw_htab *t)
{
	uint32_t new_cap = t->cap ? t->cap * 2 : HTAB_MIN_CAP;
	if (new_cap > HTAB_MAX_CAP)
		return false;
	struct sw_htab_slot *slots = rt_calloc(new_cap, sizeof(*slots));
	if (!slots)
		return false;
	for (uint32_t i = 0; i < t->cap; i++) {
		if (t->slots[i].idx_plus1)
			htab_place(slots, new_cap, t->slots[i].hash, t->slots[i].idx_plus1);
	}
	rt_free(t->slots);
	t->slots = slots;
	t->cap = new_cap;
	return true;
}

bool sw_htab_insert(struct sw_htab *t, uint32_t hash, uint32_t idx)
{
	if (idx == SW_HTAB_NONE)
		return false;
	/* Keep count + 1 <= 3/4 of the capacity. */
	if ((uint64_t)(t->count + 1) * 4 > (uint64_t)t->cap * 3 && !htab_grow(t))
		return false;
	htab_place(t->slots, t->cap, hash, idx + 1);
	t->count++;
	return true;
}

void sw_htab_free(struct sw_htab *t)
{
	rt_free(t->slots);
	t->slots = NULL;
	t->cap = 0;
	t->count = 0;
}

bool sw_array_reserve(void **arr, uint32_t *cap, uint32_t need, size_t elem_size)
{
	if (need <= *cap)
		return true;
	uint64_t new_cap = *cap ? (uint64_t)*cap : 16;
	while (new_cap < need)
		new_cap *= 2;
	if (new_cap > UINT32_MAX / 2 || new_cap * elem_size > (uint64_t)SIZE_MAX / 2)
		return false;
	void *p = rt_realloc(*arr, (size_t)new_cap * elem_size);
	if (!p)
		return false;
	*arr = p;
	*cap = (uint32_t)new_cap;
	return true;
}
