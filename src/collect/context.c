/* Per-thread span context without libc TLS: a table keyed by the thread
 * pointer, double-buffered values, generation counter for remote readers. */
#include "collect/context.h"
#include "collect/threads.h"
#include "rt/sys.h"

#define CONTEXT_PROBES 16u
#define REMOTE_READ_TRIES 8

struct context_slot {
	_Atomic uintptr_t key; /* thread pointer; 0: free */
	atomic_int tid;
	atomic_uint active;    /* index of the copy readers use */
	atomic_uint generation; /* bumped after every flip */
};

/* Keys are compact so a search by tid touches few pages; the values are
 * only touched for threads that set a context. */
static struct context_slot slots[CONTEXT_SLOTS];
static struct context_value values[CONTEXT_SLOTS][2];
/* Slots ever claimed (a bit stays set when its slot is freed): a fork child
 * visits only these, never reading the pages of slots no thread used. */
static atomic_ullong slots_claimed[CONTEXT_SLOTS / 64u];
/* Nonzero once any slot was claimed: until a thread sets a context (most
 * programs never do), a search finds nothing without probing the table,
 * whose lines a sampled allocation would otherwise miss in the cache. */
static atomic_uint any_claimed;

static struct context_value *copies_of(const struct context_slot *s) { return values[s - slots]; }

static inline uint32_t slot_hash(uintptr_t tp)
{
	return (uint32_t)(((uint64_t)tp * RT_HASH_MUL64) >> 40) & (CONTEXT_SLOTS - 1u);
}

static struct context_slot *find(uintptr_t tp)
{
	if (atomic_load_explicit(&any_claimed, memory_order_acquire) == 0)
		return NULL;
	uint32_t h = slot_hash(tp);
	for (uint32_t i = 0; i < CONTEXT_PROBES; i++) {
		struct context_slot *s = &slots[(h + i) & (CONTEXT_SLOTS - 1u)];
		if (atomic_load_explicit(&s->key, memory_order_acquire) == tp)
			return s;
	}
	return NULL;
}

/* The calling thread's slot, claimed on first use.  A thread pointer can be
 * reused by a new thread after the old one exits: the kernel tid tells them
 * apart, and the new thread starts from an empty context. */
static struct context_slot *self_slot(bool claim)
{
	uintptr_t tp = rt_thread_pointer();
	struct context_slot *s = find(tp);
	if (s || !claim)
		return s;
	int tid = (int)sys_gettid();
	uint32_t h = slot_hash(tp);
	for (uint32_t i = 0; i < CONTEXT_PROBES; i++) {
		s = &slots[(h + i) & (CONTEXT_SLOTS - 1u)];
		uintptr_t expected = 0;
		if (atomic_compare_exchange_strong(&s->key, &expected, tp)) {
			uint32_t idx = (uint32_t)(s - slots);
			atomic_fetch_or(&slots_claimed[idx / 64u], 1ull << (idx % 64u));
			if (atomic_load_explicit(&any_claimed, memory_order_relaxed) == 0)
				atomic_store_explicit(&any_claimed, 1, memory_order_release);
			rt_memset(copies_of(s), 0, sizeof(values[0]));
			atomic_store(&s->active, 0);
			atomic_store(&s->tid, tid);
			/* Tell samplers on other threads where to look. */
			int reg = threads_find(tid);
			if (reg >= 0)
				atomic_store(&thread_slots[reg].context_slot, (int)(s - slots));
			return s;
		}
		/* A slot left by an exited thread that had the same pointer. */
		if (expected == tp)
			return s;
	}
	rt_log_once(RT_LOG_WARN, "too many threads set a span context; some samples are "
				 "not labelled");
	return NULL;
}

/* An edit: the active value copied into the inactive copy, changed there,
 * then published by flipping the index. */
static struct context_value *edit_begin(struct context_slot *s)
{
	unsigned cur = atomic_load_explicit(&s->active, memory_order_relaxed);
	struct context_value *v = &copies_of(s)[cur ^ 1u];
	*v = copies_of(s)[cur];
	return v;
}

static void edit_publish(struct context_slot *s)
{
	unsigned cur = atomic_load_explicit(&s->active, memory_order_relaxed);
	atomic_store_explicit(&s->active, cur ^ 1u, memory_order_release);
	atomic_fetch_add_explicit(&s->generation, 1, memory_order_release);
}

int context_set_span(uint64_t local_root_span_id, uint64_t span_id)
{
	struct context_slot *s = self_slot(true);
	if (!s)
		return -ENOSPC;
	struct context_value *v = edit_begin(s);
	v->local_root_span_id = local_root_span_id;
	v->span_id = span_id;
	edit_publish(s);
	return 0;
}

/* ---- requests per endpoint ---- */

#define ENDPOINT_SLOTS 256u /* power of two */
#define ENDPOINT_PROBES 32u

enum { EP_EMPTY = 0, EP_WRITING, EP_READY };

struct endpoint_slot {
	atomic_uint state;
	uint32_t hash;
	atomic_ullong count;
	char name[CONTEXT_ENDPOINT_MAX];
};

static struct endpoint_slot endpoint_table[ENDPOINT_SLOTS];
static atomic_ullong endpoints_dropped;
/* Endpoint slots claimed: exports and a fork child visit only these. */
static atomic_ullong endpoints_claimed[ENDPOINT_SLOTS / 64u];

/* The first endpoint slot at or after `from` claimed since the last
 * reset, or -1. */
static int next_claimed_endpoint(int from)
{
	return rt_bitmap_next(endpoints_claimed, (int)RT_ARRAY_LEN(endpoints_claimed), from);
}

static uint32_t endpoint_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static void endpoint_count(const char *name)
{
	size_t n = rt_strnlen(name, CONTEXT_ENDPOINT_MAX - 1);
	uint32_t h = endpoint_hash(name, n);
	for (uint32_t i = 0; i < ENDPOINT_PROBES; i++) {
		struct endpoint_slot *e = &endpoint_table[(h + i) & (ENDPOINT_SLOTS - 1)];
		unsigned st = atomic_load_explicit(&e->state, memory_order_acquire);
		if (st == EP_EMPTY) {
			unsigned expect = EP_EMPTY;
			if (atomic_compare_exchange_strong(&e->state, &expect, EP_WRITING)) {
				uint32_t idx = (uint32_t)(e - endpoint_table);
				atomic_fetch_or(&endpoints_claimed[idx / 64u], 1ull << (idx % 64u));
				rt_memcpy(e->name, name, n);
				e->name[n] = '\0';
				e->hash = h;
				atomic_store_explicit(&e->state, EP_READY, memory_order_release);
				atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
				return;
			}
			st = atomic_load_explicit(&e->state, memory_order_acquire);
		}
		if (st == EP_READY && e->hash == h && rt_strncmp(e->name, name, n) == 0 &&
		    e->name[n] == '\0') {
			atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
			return;
		}
	}
	atomic_fetch_add_explicit(&endpoints_dropped, 1, memory_order_relaxed);
}

uint64_t context_endpoint_counts_take(void (*fn)(void *ctx, const char *name, uint64_t count),
				      void *ctx)
{
	for (int i = next_claimed_endpoint(0); i >= 0; i = next_claimed_endpoint(i + 1)) {
		struct endpoint_slot *e = &endpoint_table[i];
		if (atomic_load_explicit(&e->state, memory_order_acquire) != EP_READY)
			continue;
		uint64_t c = atomic_exchange_explicit(&e->count, 0, memory_order_relaxed);
		if (c)
			fn(ctx, e->name, c);
	}
	return atomic_exchange_explicit(&endpoints_dropped, 0, memory_order_relaxed);
}

bool context_endpoint_counts_pending(void)
{
	for (int i = next_claimed_endpoint(0); i >= 0; i = next_claimed_endpoint(i + 1))
		if (atomic_load_explicit(&endpoint_table[i].count, memory_order_relaxed) != 0)
			return true;
	return atomic_load_explicit(&endpoints_dropped, memory_order_relaxed) != 0;
}

int context_set_endpoint(const char *endpoint)
{
	if (endpoint && endpoint[0])
		endpoint_count(endpoint);
	struct context_slot *s = self_slot(true);
	if (!s)
		return -ENOSPC;
	struct context_value *v = edit_begin(s);
	rt_strlcpy(v->endpoint, endpoint ? endpoint : "", sizeof(v->endpoint));
	edit_publish(s);
	return 0;
}

int context_set_label(const char *key, const char *value)
{
	if (!key || !*key || rt_strlen(key) >= CONTEXT_KEY_MAX)
		return -EINVAL;
	struct context_slot *s = self_slot(true);
	if (!s)
		return -ENOSPC;
	struct context_value *v = edit_begin(s);
	int found = -1, empty = -1;
	for (int i = 0; i < CONTEXT_LABELS; i++) {
		if (rt_streq(v->labels[i].key, key))
			found = i;
		else if (!v->labels[i].key[0] && empty < 0)
			empty = i;
	}
	if (!value) {
		if (found >= 0)
			rt_memset(&v->labels[found], 0, sizeof(v->labels[found]));
	} else if (found < 0 && empty < 0) {
		return -ENOSPC; /* nothing published */
	} else {
		int i = found >= 0 ? found : empty;
		rt_strlcpy(v->labels[i].key, key, sizeof(v->labels[i].key));
		rt_strlcpy(v->labels[i].value, value, sizeof(v->labels[i].value));
	}
	edit_publish(s);
	return 0;
}

int context_clear(void)
{
	struct context_slot *s = self_slot(false);
	if (!s)
		return 0;
	rt_memset(edit_begin(s), 0, sizeof(struct context_value));
	edit_publish(s);
	return 0;
}

void context_thread_started(void)
{
	/* A new thread may have the thread pointer of one that exited. */
	struct context_slot *s = self_slot(false);
	if (!s)
		return;
	rt_memset(edit_begin(s), 0, sizeof(struct context_value));
	edit_publish(s);
	atomic_store(&s->tid, (int)sys_gettid());
}

void context_thread_exiting(void)
{
	struct context_slot *s = self_slot(false);
	if (s)
		atomic_store_explicit(&s->key, 0, memory_order_release);
}

/* No API context: only the fields a label could come from are cleared. */
static void clear_api_fields(struct context_value *v)
{
	v->local_root_span_id = 0;
	v->span_id = 0;
	v->endpoint[0] = '\0';
	for (int i = 0; i < CONTEXT_LABELS; i++)
		v->labels[i].key[0] = '\0';
}

bool context_read_self(struct context_value *out)
{
	struct context_slot *s = self_slot(false);
	bool otel = otel_context_present();
	if (!s && !otel)
		return false;
	if (s) {
		unsigned cur = atomic_load_explicit(&s->active, memory_order_acquire);
		*out = copies_of(s)[cur];
	} else {
		clear_api_fields(out);
	}
	bool have_otel = otel && otel_context_read_self(&out->otel);
	if (!have_otel)
		out->otel.span_id = 0;
	return s != NULL || have_otel;
}

bool context_read_thread(int slot, int tid, uintptr_t thread_pointer, struct context_value *out)
{
	bool api = context_read_slot(slot, tid, out);
	if (!api)
		clear_api_fields(out);
	bool have_otel = otel_context_read_thread(thread_pointer, &out->otel);
	return api || have_otel;
}

unsigned context_generation(int slot, int tid)
{
	if (slot < 0 || (uint32_t)slot >= CONTEXT_SLOTS)
		return 0;
	const struct context_slot *s = &slots[slot];
	if (!atomic_load_explicit(&s->key, memory_order_acquire) ||
	    atomic_load_explicit(&s->tid, memory_order_relaxed) != tid)
		return 0;
	return atomic_load_explicit(&s->generation, memory_order_acquire);
}

bool context_read_slot(int slot, int tid, struct context_value *out)
{
	if (slot < 0 || (uint32_t)slot >= CONTEXT_SLOTS)
		return false;
	struct context_slot *s = &slots[slot];
	for (int t = 0; t < REMOTE_READ_TRIES; t++) {
		unsigned g = atomic_load_explicit(&s->generation, memory_order_acquire);
		if (!atomic_load_explicit(&s->key, memory_order_acquire) ||
		    atomic_load_explicit(&s->tid, memory_order_relaxed) != tid)
			return false;
		unsigned cur = atomic_load_explicit(&s->active, memory_order_acquire);
		*out = values[slot][cur];
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&s->generation, memory_order_relaxed) == g)
			return true;
	}
	return false;
}

void context_to_labels(struct context_labels *out)
{
	const struct context_value *v = &out->value;
	uint32_t n = 0;
	if (v->local_root_span_id) {
		out->labels[n++] = (struct sw_label){ .key = SW_LABEL_LOCAL_ROOT_SPAN_ID,
						      .num = (int64_t)v->local_root_span_id };
		out->labels[n++] = (struct sw_label){ .key = SW_LABEL_SPAN_ID,
						      .num = (int64_t)v->span_id };
	}
	else if (v->otel.span_id && !v->span_id) {
		otel_trace_id_hex(v->otel.trace_id, out->trace_id_hex);
		out->labels[n++] = (struct sw_label){ .key = SW_LABEL_SPAN_ID,
						      .num = (int64_t)v->otel.span_id };
		out->labels[n++] = (struct sw_label){ .key = SW_LABEL_TRACE_ID,
						      .str = out->trace_id_hex };
	}
	for (uint32_t i = 0; v->otel.span_id && i < v->otel.n_attrs && i < OTEL_ATTRS_MAX; i++) {
		const char *key = otel_context_key_name(v->otel.attrs[i].key);
		if (key)
			out->labels[n++] = (struct sw_label){ .key = key, .str = v->otel.attrs[i].value };
	}
	if (v->endpoint[0])
		out->labels[n++] = (struct sw_label){ .key = SW_LABEL_TRACE_ENDPOINT,
						      .str = v->endpoint };
	for (int i = 0; i < CONTEXT_LABELS; i++) {
		if (v->labels[i].key[0])
			out->labels[n++] = (struct sw_label){ .key = v->labels[i].key,
							      .str = v->labels[i].value };
	}
	out->n = n;
}

void context_after_fork_child(void)
{
	/* The parent's requests are counted in the parent's profiles. */
	/* Tables are written only where they hold something, so the pages the
	 * parent never used stay shared with it. */
	for (int i = next_claimed_endpoint(0); i >= 0; i = next_claimed_endpoint(i + 1))
		if (atomic_load(&endpoint_table[i].count))
			atomic_store(&endpoint_table[i].count, 0);
	atomic_store(&endpoints_dropped, 0);
	uintptr_t tp = rt_thread_pointer();
	int tid = (int)sys_gettid();
	for (int i = rt_bitmap_next(slots_claimed, (int)RT_ARRAY_LEN(slots_claimed), 0); i >= 0;
	     i = rt_bitmap_next(slots_claimed, (int)RT_ARRAY_LEN(slots_claimed), i + 1)) {
		uintptr_t key = atomic_load(&slots[i].key);
		if (key == tp)
			atomic_store(&slots[i].tid, tid);
		else if (key)
			atomic_store(&slots[i].key, 0);
	}
}
