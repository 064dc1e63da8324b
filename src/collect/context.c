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

static struct context_value *copies_of(const struct context_slot *s) { return values[s - slots]; }

static inline uint32_t slot_hash(uintptr_t tp)
{
	return (uint32_t)(((uint64_t)tp * RT_HASH_MUL64) >> 40) & (CONTEXT_SLOTS - 1u);
}

static struct context_slot *find(uintptr_t tp)
{
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

int context_set_endpoint(const char *endpoint)
{
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

bool context_read_self(struct context_value *out)
{
	struct context_slot *s = self_slot(false);
	if (!s)
		return false;
	unsigned cur = atomic_load_explicit(&s->active, memory_order_acquire);
	*out = copies_of(s)[cur];
	return true;
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
	uintptr_t tp = rt_thread_pointer();
	int tid = (int)sys_gettid();
	for (uint32_t i = 0; i < CONTEXT_SLOTS; i++) {
		if (atomic_load(&slots[i].key) == tp)
			atomic_store(&slots[i].tid, tid);
		else
			atomic_store(&slots[i].key, 0);
	}
}
