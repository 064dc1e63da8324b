/* Aggregated profiles and the thread-safe recorder (see profile.h).
 *
 * Layout: strings, stacks and samples each live in a dense array (so ids
 * are array indices) with an open-addressing index for deduplication.
 * Variable-sized data (string bytes, program counters, labels, values) sits
 * in a chunked arena owned by the profile and freed at once on release.
 * A new sample is admitted all or nothing: every bound is checked before
 * anything is inserted, so an overflowing sample leaves no partial state.
 */
#include "profile/profile.h"
#include "profile/htab.h"

/* ---- value slots and synthetic frames ---- */

static const char *const value_type_names[SW_V_COUNT] = {
	[SW_V_CPU_SAMPLES] = "cpu-samples",
	[SW_V_CPU_TIME] = "cpu-time",
	[SW_V_WALL_SAMPLES] = "wall-samples",
	[SW_V_WALL_TIME] = "wall-time",
	[SW_V_ALLOC_SAMPLES] = "alloc-samples",
	[SW_V_ALLOC_SPACE] = "alloc-space",
	[SW_V_HEAP_LIVE_SAMPLES] = "heap-live-samples",
	[SW_V_HEAP_LIVE_SIZE] = "heap-live-size",
	[SW_V_LOCK_ACQUIRE] = "lock-acquire",
	[SW_V_LOCK_ACQUIRE_WAIT] = "lock-acquire-wait",
	[SW_V_LOCK_RELEASE] = "lock-release",
	[SW_V_LOCK_RELEASE_HOLD] = "lock-release-hold",
	[SW_V_EXCEPTION_SAMPLES] = "exception-samples",
};

static const char *const value_unit_names[SW_V_COUNT] = {
	[SW_V_CPU_SAMPLES] = "count",
	[SW_V_CPU_TIME] = "nanoseconds",
	[SW_V_WALL_SAMPLES] = "count",
	[SW_V_WALL_TIME] = "nanoseconds",
	[SW_V_ALLOC_SAMPLES] = "count",
	[SW_V_ALLOC_SPACE] = "bytes",
	[SW_V_HEAP_LIVE_SAMPLES] = "count",
	[SW_V_HEAP_LIVE_SIZE] = "bytes",
	[SW_V_LOCK_ACQUIRE] = "count",
	[SW_V_LOCK_ACQUIRE_WAIT] = "nanoseconds",
	[SW_V_LOCK_RELEASE] = "count",
	[SW_V_LOCK_RELEASE_HOLD] = "nanoseconds",
	[SW_V_EXCEPTION_SAMPLES] = "count",
};

const char *sw_value_type_name(enum sw_value_slot slot)
{
	return (unsigned)slot < SW_V_COUNT ? value_type_names[slot] : "";
}

const char *sw_value_unit_name(enum sw_value_slot slot)
{
	return (unsigned)slot < SW_V_COUNT ? value_unit_names[slot] : "";
}

uint32_t sw_kind_value_mask(enum sw_kind kind)
{
	switch (kind) {
	case SW_KIND_CPU:
		return SW_V_BIT(SW_V_CPU_SAMPLES) | SW_V_BIT(SW_V_CPU_TIME);
	case SW_KIND_WALL:
		return SW_V_BIT(SW_V_WALL_SAMPLES) | SW_V_BIT(SW_V_WALL_TIME);
	case SW_KIND_ALLOC:
		return SW_V_BIT(SW_V_ALLOC_SAMPLES) | SW_V_BIT(SW_V_ALLOC_SPACE);
	case SW_KIND_HEAP:
		return SW_V_BIT(SW_V_HEAP_LIVE_SAMPLES) | SW_V_BIT(SW_V_HEAP_LIVE_SIZE);
	case SW_KIND_LOCK:
		return SW_V_BIT(SW_V_LOCK_ACQUIRE) | SW_V_BIT(SW_V_LOCK_ACQUIRE_WAIT) |
		       SW_V_BIT(SW_V_LOCK_RELEASE) | SW_V_BIT(SW_V_LOCK_RELEASE_HOLD);
	case SW_KIND_EXCEPTION:
		return SW_V_BIT(SW_V_EXCEPTION_SAMPLES);
	case SW_KIND_COUNT:
		break;
	}
	return 0;
}

enum sw_value_slot sw_kind_main_slot(enum sw_kind kind)
{
	switch (kind) {
	case SW_KIND_CPU:
		return SW_V_CPU_TIME;
	case SW_KIND_WALL:
		return SW_V_WALL_TIME;
	case SW_KIND_ALLOC:
		return SW_V_ALLOC_SPACE;
	case SW_KIND_HEAP:
		return SW_V_HEAP_LIVE_SIZE;
	case SW_KIND_LOCK:
		return SW_V_LOCK_ACQUIRE_WAIT;
	case SW_KIND_EXCEPTION:
	case SW_KIND_COUNT:
		break;
	}
	return SW_V_EXCEPTION_SAMPLES;
}

const char *sw_synthetic_frame_name(uint64_t pc)
{
	switch (pc) {
	case SW_PC_UNKNOWN:
		return "[unknown]";
	case SW_PC_TRUNCATED:
		return "[truncated]";
	case SW_PC_OVERFLOW:
		return "[overflow]";
	case SW_PC_TRIMMED:
		return "[trimmed]";
	case SW_PC_UNSAMPLED:
		return "[unsampled]";
	default:
		return pc < SW_PC_SYNTHETIC_LIMIT ? "[unknown]" : NULL;
	}
}

/* ---- arena ---- */

#define ARENA_CHUNK_BYTES (64u * 1024u)

struct arena_chunk {
	struct arena_chunk *next;
	size_t cap;  /* bytes in data */
	size_t used;
	uint64_t data[]; /* 8-byte aligned storage */
};

struct arena {
	struct arena_chunk *head;
	uint64_t total; /* bytes held from rt_malloc */
};

/* n bytes, 8-byte aligned, or NULL when the heap is exhausted. */
static void *arena_alloc(struct arena *a, size_t n)
{
	size_t rounded = (n + 7u) & ~(size_t)7u;
	if (rounded < n)
		return NULL;
	struct arena_chunk *c = a->head;
	if (!c || c->cap - c->used < rounded) {
		size_t cap = RT_MAX(rounded, (size_t)ARENA_CHUNK_BYTES - sizeof(*c));
		c = rt_malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		/* A big one-off block goes behind the head so the head's room stays usable. */
		if (a->head && rounded > ARENA_CHUNK_BYTES / 4) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		a->total += sizeof(*c) + cap;
	}
	void *p = (uint8_t *)c->data + c->used;
	c->used += rounded;
	return p;
}

static void arena_free(struct arena *a)
{
	struct arena_chunk *c = a->head;
	while (c) {
		struct arena_chunk *next = c->next;
		rt_free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}

/* ---- the profile ---- */

struct stored_string {
	const char *s;
	uint32_t len;
	uint32_t hash;
};

struct stored_stack {
	const uint64_t *pcs;
	uint32_t depth;
	uint32_t hash;
};

struct stored_sample {
	uint32_t stack_id;
	uint32_t hash;
	uint16_t n_labels;
	uint16_t slot_mask;          /* slots present in values */
	int64_t *values;             /* popcount(slot_mask) values, in slot order */
	struct profile_label *labels; /* canonical order */
};

/* Label strings come mostly from the same few pointers (constant keys, a
 * thread's name buffer): a direct-mapped cache from a pointer to the id of
 * the string it held, checked against the stored bytes before each use,
 * spares hashing and probing.  Ids are profile-local, so the cache lives
 * and dies with its profile. */
#define STRING_CACHE_BITS 7u
struct string_cache_entry {
	const char *ptr; /* NULL: empty */
	uint32_t id;
};

struct profile {
	struct profile_limits lim;
	struct arena arena;

	struct string_cache_entry string_cache[1u << STRING_CACHE_BITS];

	struct stored_string *strings;
	uint32_t n_strings, cap_strings;
	uint32_t string_bytes;
	struct sw_htab string_index;

	struct stored_stack *stacks;
	uint32_t n_stacks, cap_stacks;
	uint32_t frames;
	struct sw_htab stack_index;

	struct stored_sample *samples;
	uint32_t n_samples, cap_samples;
	struct sw_htab sample_index;

	int64_t overflow_values[SW_V_COUNT];
	bool overflow_used;
	uint64_t overflowed_adds;
	uint64_t dropped_labels;
	uint32_t timeline_samples;
	uint64_t timeline_dropped;

	uint64_t start_ns, end_ns;
};

static const uint64_t overflow_stack_pcs[1] = {SW_PC_OVERFLOW};

/* Frees everything the profile holds and makes it empty again (never fails). */
static void profile_clear(struct profile *p)
{
	arena_free(&p->arena);
	rt_free(p->strings);
	rt_free(p->stacks);
	rt_free(p->samples);
	sw_htab_free(&p->string_index);
	sw_htab_free(&p->stack_index);
	sw_htab_free(&p->sample_index);
	struct profile_limits lim = p->lim;
	rt_memset(p, 0, sizeof(*p));
	p->lim = lim;
	p->start_ns = rt_realtime_ns();
}

struct profile *profile_create(const struct profile_limits *limits)
{
	struct profile *p = rt_calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (limits)
		p->lim = *limits;
	if (!p->lim.max_samples)
		p->lim.max_samples = PROFILE_DEFAULT_MAX_SAMPLES;
	if (!p->lim.max_string_bytes)
		p->lim.max_string_bytes = PROFILE_DEFAULT_MAX_STRING_BYTES;
	if (!p->lim.max_frames)
		p->lim.max_frames = PROFILE_DEFAULT_MAX_FRAMES;
	if (!p->lim.max_depth)
		p->lim.max_depth = PROFILE_DEFAULT_MAX_DEPTH;
	p->start_ns = rt_realtime_ns();
	return p;
}

void profile_release(struct profile *p)
{
	if (!p)
		return;
	profile_clear(p);
	rt_free(p);
}

/* ---- strings ---- */

struct string_key {
	const struct profile *p;
	const char *s;
	uint32_t len;
};

static bool string_eq(const void *ctx, uint32_t idx)
{
	const struct string_key *k = ctx;
	const struct stored_string *e = &k->p->strings[idx];
	return e->len == k->len && rt_memcmp(e->s, k->s, k->len) == 0;
}

static uint32_t string_hash(const char *s, uint32_t len)
{
	return rt_hash_fold(rt_hash_bytes(RT_HASH_SEED, s, len));
}

/* Id of an interned string, or SW_HTAB_NONE. */
static uint32_t string_find(const struct profile *p, const char *s, uint32_t len, uint32_t hash)
{
	if (len == 0)
		return 0;
	struct string_key k = {p, s, len};
	return sw_htab_lookup(&p->string_index, hash, string_eq, &k);
}

/* Interns s; SW_HTAB_NONE when memory is exhausted (bounds are checked by the caller). */
static uint32_t string_intern(struct profile *p, const char *s, uint32_t len)
{
	uint32_t hash = string_hash(s, len);
	uint32_t id = string_find(p, s, len, hash);
	if (id != SW_HTAB_NONE)
		return id;
	if (p->n_strings == 0) {
		/* id 0 is always "" */
		void *arr = p->strings;
		if (!sw_array_reserve(&arr, &p->cap_strings, 1, sizeof(*p->strings)))
			return SW_HTAB_NONE;
		p->strings = arr;
		p->strings[0] = (struct stored_string){"", 0, string_hash("", 0)};
		p->n_strings = 1;
	}
	void *arr = p->strings;
	if (!sw_array_reserve(&arr, &p->cap_strings, p->n_strings + 1, sizeof(*p->strings)))
		return SW_HTAB_NONE;
	p->strings = arr;
	char *copy = arena_alloc(&p->arena, (size_t)len + 1);
	if (!copy)
		return SW_HTAB_NONE;
	rt_memcpy(copy, s, len);
	copy[len] = '\0';
	id = p->n_strings;
	if (!sw_htab_insert(&p->string_index, hash, id))
		return SW_HTAB_NONE;
	p->strings[id] = (struct stored_string){copy, len, hash};
	p->n_strings++;
	p->string_bytes += len;
	return id;
}

static struct string_cache_entry *string_cache_entry(struct profile *p, const char *s)
{
	return &p->string_cache[((uint64_t)(uintptr_t)s * RT_HASH_MUL64) >> (64u - STRING_CACHE_BITS)];
}

/* Whether the NUL-terminated s equals e, reading s no further than its end
 * (stored strings hold no NUL, so a shorter s differs at its NUL). */
static bool string_equals_stored(const struct stored_string *e, const char *s)
{
	for (uint32_t i = 0; i < e->len; i++) {
		if (s[i] != e->s[i])
			return false;
	}
	return s[e->len] == '\0';
}

/* The id of the NUL-terminated s, or SW_HTAB_NONE when it is not interned
 * yet; *len gets its length. */
static uint32_t string_resolve(struct profile *p, const char *s, uint32_t *len)
{
	if (s[0] == '\0') {
		*len = 0;
		return 0;
	}
	struct string_cache_entry *c = string_cache_entry(p, s);
	if (c->ptr == s && string_equals_stored(&p->strings[c->id], s)) {
		*len = p->strings[c->id].len;
		return c->id;
	}
	*len = (uint32_t)rt_strnlen(s, UINT32_MAX / 2);
	uint32_t id = string_find(p, s, *len, string_hash(s, *len));
	if (id != SW_HTAB_NONE) {
		c->ptr = s;
		c->id = id;
	}
	return id;
}

/* string_intern, remembering s's pointer for string_resolve. */
static uint32_t string_intern_cached(struct profile *p, const char *s, uint32_t len)
{
	uint32_t id = string_intern(p, s, len);
	if (id != SW_HTAB_NONE && id != 0) {
		struct string_cache_entry *c = string_cache_entry(p, s);
		c->ptr = s;
		c->id = id;
	}
	return id;
}

/* ---- stacks ----
 * A stack key is pcs[0..n_pcs) followed by an optional synthetic tail frame
 * (the "[truncated]" or "[unknown]" marker), so a cut stack needs no copy. */

struct stack_key {
	const struct profile *p;
	const uint64_t *pcs;
	uint32_t n_pcs;
	uint64_t tail; /* 0: none */
	uint32_t depth;
};

static uint32_t stack_key_hash(const struct stack_key *k)
{
	uint64_t h = rt_hash_mix(RT_HASH_SEED, k->depth);
	for (uint32_t i = 0; i < k->n_pcs; i++)
		h = rt_hash_mix(h, k->pcs[i]);
	if (k->tail)
		h = rt_hash_mix(h, k->tail);
	return rt_hash_fold(h);
}

static bool stack_eq(const void *ctx, uint32_t idx)
{
	const struct stack_key *k = ctx;
	const struct stored_stack *e = &k->p->stacks[idx];
	if (e->depth != k->depth)
		return false;
	/* Word compares: rt_memcmp goes byte by byte. */
	for (uint32_t i = 0; i < k->n_pcs; i++) {
		if (e->pcs[i] != k->pcs[i])
			return false;
	}
	return !k->tail || e->pcs[k->n_pcs] == k->tail;
}

static uint32_t stack_insert(struct profile *p, const struct stack_key *k, uint32_t hash)
{
	void *arr = p->stacks;
	if (!sw_array_reserve(&arr, &p->cap_stacks, p->n_stacks + 1, sizeof(*p->stacks)))
		return SW_HTAB_NONE;
	p->stacks = arr;
	uint64_t *pcs = arena_alloc(&p->arena, (size_t)k->depth * sizeof(uint64_t));
	if (!pcs)
		return SW_HTAB_NONE;
	if (k->n_pcs)
		rt_memcpy(pcs, k->pcs, (size_t)k->n_pcs * sizeof(uint64_t));
	if (k->tail)
		pcs[k->n_pcs] = k->tail;
	uint32_t id = p->n_stacks;
	if (!sw_htab_insert(&p->stack_index, hash, id))
		return SW_HTAB_NONE;
	p->stacks[id] = (struct stored_stack){pcs, k->depth, hash};
	p->n_stacks++;
	p->frames += k->depth;
	return id;
}

/* ---- samples ---- */

struct sample_key {
	const struct profile *p;
	uint32_t stack_id;
	uint32_t n_labels;
	const struct profile_label *labels;
};

static uint64_t label_hash(uint64_t h, const struct profile_label *l)
{
	h = rt_hash_mix(h, ((uint64_t)l->key << 32) | l->str);
	h = rt_hash_mix(h, ((uint64_t)l->num_unit << 1) | (l->is_num ? 1u : 0u));
	return rt_hash_mix(h, (uint64_t)l->num);
}

static uint32_t sample_key_hash(const struct sample_key *k)
{
	uint64_t h = rt_hash_mix(RT_HASH_SEED, ((uint64_t)k->stack_id << 32) | k->n_labels);
	for (uint32_t i = 0; i < k->n_labels; i++)
		h = label_hash(h, &k->labels[i]);
	return rt_hash_fold(h);
}

static bool label_eq(const struct profile_label *a, const struct profile_label *b)
{
	return a->key == b->key && a->is_num == b->is_num && a->str == b->str &&
	       a->num == b->num && a->num_unit == b->num_unit;
}

static bool sample_eq(const void *ctx, uint32_t idx)
{
	const struct sample_key *k = ctx;
	const struct stored_sample *e = &k->p->samples[idx];
	if (e->stack_id != k->stack_id || e->n_labels != k->n_labels)
		return false;
	for (uint32_t i = 0; i < k->n_labels; i++) {
		if (!label_eq(&e->labels[i], &k->labels[i]))
			return false;
	}
	return true;
}

/* Strict order of labels, so the same set given in any order aggregates. */
static bool label_before(const struct profile_label *a, const struct profile_label *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if (a->is_num != b->is_num)
		return !a->is_num;
	if (a->str != b->str)
		return a->str < b->str;
	if (a->num != b->num)
		return a->num < b->num;
	return a->num_unit < b->num_unit;
}

static void labels_sort(struct profile_label *l, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		struct profile_label cur = l[i];
		uint32_t j = i;
		while (j > 0 && label_before(&cur, &l[j - 1])) {
			l[j] = l[j - 1];
			j--;
		}
		l[j] = cur;
	}
}

static int64_t add_saturating(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static uint32_t popcount16(uint32_t m)
{
	return (uint32_t)__builtin_popcount(m & 0xffffu);
}

/* Adds values to a stored sample, widening its slot set if needed (a new
 * sample's is empty): a widened sample's values are written in one pass. */
static bool sample_add_values(struct profile *p, struct stored_sample *e, uint32_t add_mask,
			      const int64_t add[SW_V_COUNT])
{
	uint32_t mask = e->slot_mask | add_mask;
	if (mask != e->slot_mask) {
		int64_t *values = arena_alloc(&p->arena, popcount16(mask) * sizeof(int64_t));
		if (!values)
			return false;
		uint32_t from = 0, to = 0;
		for (uint32_t s = 0; s < SW_V_COUNT; s++) {
			if (!(mask & SW_V_BIT(s)))
				continue;
			int64_t old = (e->slot_mask & SW_V_BIT(s)) ? e->values[from++] : 0;
			values[to++] = (add_mask & SW_V_BIT(s)) ? add_saturating(old, add[s]) : old;
		}
		e->values = values;
		e->slot_mask = (uint16_t)mask;
		return true;
	}
	uint32_t pos = 0;
	for (uint32_t s = 0; s < SW_V_COUNT; s++) {
		if (!(mask & SW_V_BIT(s)))
			continue;
		if (add_mask & SW_V_BIT(s))
			e->values[pos] = add_saturating(e->values[pos], add[s]);
		pos++;
	}
	return true;
}

static enum profile_add_result add_to_overflow(struct profile *p, const int64_t add[SW_V_COUNT])
{
	for (uint32_t s = 0; s < SW_V_COUNT; s++)
		p->overflow_values[s] = add_saturating(p->overflow_values[s], add[s]);
	p->overflow_used = true;
	p->overflowed_adds++;
	return PROFILE_ADD_OVERFLOW;
}

/* A label's strings as given, with their lengths and known ids. */
struct label_in {
	const char *key, *str, *unit;
	uint32_t key_len, str_len, unit_len;
	uint32_t key_id, str_id, unit_id;
	bool is_num;
	int64_t num;
};

/* Resolves the label's strings (string_resolve); returns the bytes the
 * ones not interned yet would add. */
static uint64_t label_resolve(struct profile *p, struct label_in *l)
{
	uint64_t missing = 0;
	l->key_id = string_resolve(p, l->key, &l->key_len);
	if (l->key_id == SW_HTAB_NONE)
		missing += l->key_len;
	if (l->is_num) {
		l->unit_id = string_resolve(p, l->unit, &l->unit_len);
		if (l->unit_id == SW_HTAB_NONE)
			missing += l->unit_len;
	} else {
		l->str_id = string_resolve(p, l->str, &l->str_len);
		if (l->str_id == SW_HTAB_NONE)
			missing += l->str_len;
	}
	return missing;
}

/* Interns the label strings not interned yet, in label order; false when
 * memory is exhausted. */
static bool labels_intern_missing(struct profile *p, struct label_in *in, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct label_in *l = &in[i];
		if (l->key_id == SW_HTAB_NONE)
			l->key_id = string_intern_cached(p, l->key, l->key_len);
		if (l->is_num && l->unit_id == SW_HTAB_NONE)
			l->unit_id = string_intern_cached(p, l->unit, l->unit_len);
		if (!l->is_num && l->str_id == SW_HTAB_NONE)
			l->str_id = string_intern_cached(p, l->str, l->str_len);
		if (l->key_id == SW_HTAB_NONE || l->unit_id == SW_HTAB_NONE || l->str_id == SW_HTAB_NONE)
			return false;
	}
	return true;
}

static void labels_build(const struct label_in *in, uint32_t n, struct profile_label *out)
{
	for (uint32_t i = 0; i < n; i++) {
		out[i] = (struct profile_label){
			.key = in[i].key_id,
			.str = in[i].is_num ? 0 : in[i].str_id,
			.num_unit = in[i].is_num ? in[i].unit_id : 0,
			.is_num = in[i].is_num,
			.num = in[i].is_num ? in[i].num : 0,
		};
	}
	labels_sort(out, n);
}

static bool sample_insert(struct profile *p, const struct sample_key *k, uint32_t hash,
			  uint32_t add_mask, const int64_t add[SW_V_COUNT])
{
	void *arr = p->samples;
	if (!sw_array_reserve(&arr, &p->cap_samples, p->n_samples + 1, sizeof(*p->samples)))
		return false;
	p->samples = arr;
	struct profile_label *labels = NULL;
	if (k->n_labels) {
		labels = arena_alloc(&p->arena, k->n_labels * sizeof(*labels));
		if (!labels)
			return false;
		rt_memcpy(labels, k->labels, k->n_labels * sizeof(*labels));
	}
	struct stored_sample e = {
		.stack_id = k->stack_id,
		.hash = hash,
		.n_labels = (uint16_t)k->n_labels,
		.labels = labels,
	};
	if (!sample_add_values(p, &e, add_mask, add))
		return false;
	if (!sw_htab_insert(&p->sample_index, hash, p->n_samples))
		return false;
	p->samples[p->n_samples++] = e;
	return true;
}

static enum profile_add_result add_sample(struct profile *p, const struct sw_sample *s, bool untimed);

enum profile_add_result profile_add(struct profile *p, const struct sw_sample *s)
{
	return add_sample(p, s, false);
}

static enum profile_add_result add_sample(struct profile *p, const struct sw_sample *s, bool untimed)
{
	if (!p || !s || (s->depth && !s->pcs) || (s->n_values && !s->values) ||
	    (s->n_labels && !s->labels))
		return PROFILE_ADD_INVALID;

	int64_t add[SW_V_COUNT] = {0};
	for (uint32_t i = 0; i < s->n_values; i++) {
		if ((unsigned)s->values[i].slot >= SW_V_COUNT)
			return PROFILE_ADD_INVALID;
		add[s->values[i].slot] = add_saturating(add[s->values[i].slot], s->values[i].value);
	}
	uint32_t add_mask = 0;
	for (uint32_t slot = 0; slot < SW_V_COUNT; slot++) {
		if (add[slot])
			add_mask |= SW_V_BIT(slot);
	}
	if (!add_mask)
		return PROFILE_ADD_OK;

	uint32_t n_labels = s->n_labels;
	if (n_labels > SW_MAX_LABELS) {
		p->dropped_labels += n_labels - SW_MAX_LABELS;
		n_labels = SW_MAX_LABELS;
	}
	bool timestamped = false;
	if ((add_mask & p->lim.timeline_slots) && !untimed) {
		if (p->timeline_samples < p->lim.max_timeline_samples && n_labels < SW_MAX_LABELS)
			timestamped = true;
		else
			p->timeline_dropped++;
	}
	struct label_in in[SW_MAX_LABELS];
	uint64_t missing_bytes = 0;
	bool labels_known = true;
	for (uint32_t i = 0; i < n_labels; i++) {
		const struct sw_label *l = &s->labels[i];
		if (!l->key)
			return PROFILE_ADD_INVALID;
		in[i] = (struct label_in){
			.key = l->key,
			.str = l->str ? l->str : "",
			.unit = l->num_unit ? l->num_unit : "",
			.is_num = l->str == NULL,
			.num = l->num,
		};
	}
	if (timestamped) {
		uint64_t now = rt_realtime_ns();
		in[n_labels] = (struct label_in){
			.key = SW_LABEL_END_TIMESTAMP,
			.str = "",
			.unit = "",
			.is_num = true,
			.num = (int64_t)(now < p->start_ns ? p->start_ns : now),
		};
		n_labels++;
	}
	for (uint32_t i = 0; i < n_labels; i++) {
		uint64_t missing = label_resolve(p, &in[i]);
		missing_bytes += missing;
		labels_known = labels_known && in[i].key_id != SW_HTAB_NONE &&
			       in[i].str_id != SW_HTAB_NONE && in[i].unit_id != SW_HTAB_NONE;
	}

	/* The stack key: cut to max_depth with a "[truncated]" tail; an empty
	 * stack becomes "[unknown]". */
	struct stack_key sk = {.p = p, .pcs = s->pcs, .n_pcs = s->depth, .tail = 0, .depth = s->depth};
	if (s->depth == 0) {
		sk.tail = SW_PC_UNKNOWN;
		sk.depth = 1;
	} else if (s->depth > p->lim.max_depth) {
		sk.n_pcs = p->lim.max_depth - 1;
		sk.tail = SW_PC_TRUNCATED;
		sk.depth = p->lim.max_depth;
	}
	uint32_t stack_hash = stack_key_hash(&sk);
	uint32_t stack_id = sw_htab_lookup(&p->stack_index, stack_hash, stack_eq, &sk);

	struct profile_label labels[SW_MAX_LABELS];
	uint32_t sample_hash = 0;
	bool labels_built = false;
	if (stack_id != SW_HTAB_NONE && labels_known) {
		labels_build(in, n_labels, labels);
		labels_built = true;
		struct sample_key k = {p, stack_id, n_labels, labels};
		sample_hash = sample_key_hash(&k);
		uint32_t idx = sw_htab_lookup(&p->sample_index, sample_hash, sample_eq, &k);
		if (idx != SW_HTAB_NONE) {
			if (!sample_add_values(p, &p->samples[idx], add_mask, add))
				return add_to_overflow(p, add);
			return PROFILE_ADD_OK;
		}
	}

	/* A new sample: admit it only if every bound holds. */
	if (p->n_samples >= p->lim.max_samples ||
	    p->string_bytes + missing_bytes > p->lim.max_string_bytes ||
	    (stack_id == SW_HTAB_NONE && (uint64_t)p->frames + sk.depth > p->lim.max_frames))
		return add_to_overflow(p, add);
	if (!labels_known && !labels_intern_missing(p, in, n_labels))
		return add_to_overflow(p, add);
	if (stack_id == SW_HTAB_NONE) {
		stack_id = stack_insert(p, &sk, stack_hash);
		if (stack_id == SW_HTAB_NONE)
			return add_to_overflow(p, add);
	}
	/* Built above when the stack and every label string were known: nothing
	 * was interned since, so the labels and their hash still hold. */
	struct sample_key k = {p, stack_id, n_labels, labels};
	if (!labels_built) {
		labels_build(in, n_labels, labels);
		sample_hash = sample_key_hash(&k);
	}
	if (!sample_insert(p, &k, sample_hash, add_mask, add))
		return add_to_overflow(p, add);
	if (timestamped)
		p->timeline_samples++;
	return PROFILE_ADD_OK;
}

void profile_get_stats(const struct profile *p, struct profile_stats *out)
{
	rt_memset(out, 0, sizeof(*out));
	out->samples = p->n_samples;
	out->stacks = p->n_stacks;
	out->frames = p->frames;
	out->strings = p->n_strings ? p->n_strings : 1;
	out->string_bytes = p->string_bytes;
	out->overflowed_adds = p->overflowed_adds;
	out->dropped_labels = p->dropped_labels;
	out->timeline_samples = p->timeline_samples;
	out->timeline_dropped = p->timeline_dropped;
	out->memory_bytes = sizeof(*p) + p->arena.total +
			    (uint64_t)p->cap_strings * sizeof(*p->strings) +
			    (uint64_t)p->cap_stacks * sizeof(*p->stacks) +
			    (uint64_t)p->cap_samples * sizeof(*p->samples) +
			    ((uint64_t)p->string_index.cap + p->stack_index.cap + p->sample_index.cap) *
				    sizeof(struct sw_htab_slot);
	out->start_ns = p->start_ns;
	out->end_ns = p->end_ns;
}

void profile_set_times(struct profile *p, uint64_t start_ns, uint64_t end_ns)
{
	p->start_ns = start_ns;
	p->end_ns = end_ns;
}

uint32_t profile_sample_count(const struct profile *p)
{
	return p->n_samples + (p->overflow_used ? 1u : 0u);
}

bool profile_sample_get(const struct profile *p, uint32_t i, struct profile_sample_view *out)
{
	rt_memset(out, 0, sizeof(*out));
	if (i < p->n_samples) {
		const struct stored_sample *e = &p->samples[i];
		const struct stored_stack *st = &p->stacks[e->stack_id];
		out->stack_id = e->stack_id;
		out->pcs = st->pcs;
		out->depth = st->depth;
		out->labels = e->labels;
		out->n_labels = e->n_labels;
		uint32_t pos = 0;
		for (uint32_t s = 0; s < SW_V_COUNT; s++) {
			if (e->slot_mask & SW_V_BIT(s))
				out->values[s] = e->values[pos++];
		}
		return true;
	}
	if (i == p->n_samples && p->overflow_used) {
		/* The overflow stack's id follows every stored stack. */
		out->stack_id = p->n_stacks;
		out->pcs = overflow_stack_pcs;
		out->depth = 1;
		rt_memcpy(out->values, p->overflow_values, sizeof(out->values));
		return true;
	}
	return false;
}

uint32_t profile_stack_count(const struct profile *p)
{
	return p->n_stacks + 1; /* + the overflow stack */
}

uint32_t profile_string_count(const struct profile *p)
{
	return p->n_strings ? p->n_strings : 1;
}

const char *profile_string(const struct profile *p, uint32_t id, uint32_t *len)
{
	if (id == 0 || id >= p->n_strings) {
		*len = 0;
		return "";
	}
	*len = p->strings[id].len;
	return p->strings[id].s;
}

/* ---- the recorder ---- */

struct recorder {
	struct rt_mutex lock;
	struct profile *active;
	struct profile_limits limits;
};

struct recorder *recorder_create(const struct profile_limits *limits)
{
	struct recorder *r = rt_calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	if (limits)
		r->limits = *limits;
	r->active = profile_create(&r->limits);
	if (!r->active) {
		rt_free(r);
		return NULL;
	}
	return r;
}

void recorder_destroy(struct recorder *r)
{
	if (!r)
		return;
	profile_release(r->active);
	rt_free(r);
}

static enum profile_add_result record(struct recorder *r, const struct sw_sample *s, bool untimed)
{
	rt_mutex_lock(&r->lock);
	enum profile_add_result res = add_sample(r->active, s, untimed);
	rt_mutex_unlock(&r->lock);
	return res;
}

enum profile_add_result recorder_add(struct recorder *r, const struct sw_sample *s)
{
	return record(r, s, false);
}

enum profile_add_result recorder_add_untimed(struct recorder *r, const struct sw_sample *s)
{
	return record(r, s, true);
}

struct profile *recorder_swap(struct recorder *r)
{
	/* Allocate outside the lock so writers wait only for the exchange. */
	struct profile *fresh = profile_create(&r->limits);
	if (!fresh)
		return NULL;
	rt_mutex_lock(&r->lock);
	struct profile *done = r->active;
	uint64_t now = rt_realtime_ns();
	done->end_ns = now;
	fresh->start_ns = now;
	r->active = fresh;
	rt_mutex_unlock(&r->lock);
	return done;
}

/* Forgets everything the profile holds without freeing it: for a profile a
 * vanished thread may have been modifying (its pointers cannot be trusted). */
static void profile_abandon(struct profile *p)
{
	struct profile_limits lim = p->lim;
	rt_memset(p, 0, sizeof(*p));
	p->lim = lim;
	p->start_ns = rt_realtime_ns();
}

void recorder_after_fork_child(struct recorder *r)
{
	/* Held at fork time: a thread of the parent was inside profile_add,
	 * so the profile may be torn; leak its contents rather than free them. */
	bool torn = !rt_mutex_trylock(&r->lock);
	if (torn)
		profile_abandon(r->active);
	else
		profile_clear(r->active);
	rt_mutex_reset(&r->lock);
}
