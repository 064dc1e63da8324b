/* A fork family's inbox (family.h). */
#include "profile/family.h"
#include "rt/sys.h"

#include <stddef.h>

/* A slot's state: free, being written by the delivery with a token, a
 * group's head committed with that token (ready), being read by the
 * parent, or a group's later slot written and waiting for its head.  The
 * token (unique within the inbox) makes every transition a
 * compare-and-swap that a reclaimed or reused slot cannot pass by
 * accident. */
#define SLOT_FREE 0u
#define SLOT_WRITING 1u
#define SLOT_READY 2u
#define SLOT_TAKEN 3u
#define SLOT_TAIL 4u
#define SLOT_TAG_BITS 3u
#define SLOT_TAG_MASK 7u
#define SLOT_STATE(token, tag) ((uint64_t)(token) << SLOT_TAG_BITS | (tag))
#define SLOT_TOKEN(state) ((state) >> SLOT_TAG_BITS)
#define SLOT_HEADER_BYTES 16u
#define SLOT_PAYLOAD (FAMILY_SLOT_BYTES - SLOT_HEADER_BYTES)
/* A group's slots: the head's payload starts with the number of tails and
 * their slot indices (FAMILY_GROUP_SLOTS - 1 of them, unused ones 0), a
 * tail's with its head's index; the samples' records follow, whole in each
 * slot. */
#define HEAD_PREFIX_BYTES (4u * FAMILY_GROUP_SLOTS)
#define TAIL_PREFIX_BYTES 4u
/* A delivery's samples: at most this many, each at most the profile's
 * deepest stack. */
#define RECORD_MAX_SAMPLES 4096u
#define RECORD_MAX_DEPTH PROFILE_DEFAULT_MAX_DEPTH

struct family_slot {
	_Atomic uint64_t state; /* SLOT_STATE(token, tag) */
	uint32_t len;           /* payload bytes */
	uint32_t n_samples;
	uint8_t payload[SLOT_PAYLOAD];
};

struct family_inbox {
	atomic_int owner;  /* pid of the process that drains it */
	atomic_int closed; /* its last export began */
	_Atomic uint64_t tokens;
	/* Bumped by a child after it claims a slot and after it makes one
	 * ready: an owner that read it before its last scan and finds it
	 * unchanged has nothing new to look at. */
	_Atomic uint64_t events;
	atomic_uint hint; /* where the next claim looks first */
	uint8_t pad[36];  /* the slots start on their own cache line */
	struct family_slot slots[FAMILY_SLOTS];
};
_Static_assert(sizeof(struct family_slot) == FAMILY_SLOT_BYTES, "a slot's size");
_Static_assert(offsetof(struct family_inbox, slots) == 64, "the slots' cache line");

static struct {
	struct family_inbox *own;    /* this process drains it */
	struct family_inbox *parent; /* this process delivers to it */
	bool opened;                 /* family_open ran (its answer is `own`) */
	struct rt_mutex drain_lock;
	/* Owner side, under drain_lock: the writing token each slot was first
	 * seen with, and when, to reclaim the slots of children that died. */
	uint64_t seen_token[FAMILY_SLOTS];
	uint64_t seen_ns[FAMILY_SLOTS];
	/* The inbox's events when it was last scanned, and whether that scan
	 * met a slot being written (to be looked at again). */
	uint64_t scanned_events;
	bool writing_seen;
	uint8_t copy[SLOT_PAYLOAD];
	uint64_t pcs[RECORD_MAX_DEPTH];
	struct family_stats stats;
} fam = { .drain_lock = RT_MUTEX_INIT };

bool family_open(void)
{
	if (fam.opened)
		return fam.own != NULL;
	fam.opened = true;
	struct family_inbox *in = rt_shared_pages_alloc(sizeof(struct family_inbox));
	if (in == NULL)
		return false;
	atomic_store(&in->owner, (int)sys_getpid());
	/* Tokens start again in a new inbox: forget the ones seen in another
	 * (a parent's, in a child that forks in turn). */
	rt_memset(fam.seen_token, 0, sizeof(fam.seen_token));
	fam.scanned_events = 0;
	fam.writing_seen = false;
	fam.own = in;
	return true;
}

void family_after_fork_child(void)
{
	rt_mutex_reset(&fam.drain_lock);
	struct family_inbox *in = fam.own;
	fam.parent = in != NULL && atomic_load(&in->owner) == (int)sys_getppid() ? in : NULL;
	fam.own = NULL;
	fam.opened = false;
	rt_memset(&fam.stats, 0, sizeof(fam.stats));
}

bool family_can_deliver(void)
{
	struct family_inbox *in = fam.parent;
	return in != NULL && !atomic_load(&in->closed) &&
	       atomic_load(&in->owner) == (int)sys_getppid();
}

/* ---- the record: samples one after another, native byte order ----
 * u32 depth, u32 n_labels, u32 value mask, the mask's values (i64 each, in
 * slot order), depth pcs (u64), then per label: u8 is_num, u32 key length,
 * the key and a NUL, and either i64 num, u32 unit length, the unit and a
 * NUL, or u32 str length, the str and a NUL. */

struct writer {
	uint8_t *p;
	uint32_t len, cap;
	bool full;
};

static void put(struct writer *w, const void *src, uint32_t n)
{
	if (w->full || n > w->cap - w->len) {
		w->full = true;
		return;
	}
	rt_memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void put_u32(struct writer *w, uint32_t v) { put(w, &v, sizeof(v)); }

static void put_string(struct writer *w, const struct profile *p, uint32_t id)
{
	uint32_t len = 0;
	const char *s = profile_string(p, id, &len);
	if (s == NULL)
		len = 0;
	put_u32(w, len);
	if (len)
		put(w, s, len);
	put(w, "", 1);
}

/* Whether label l stays with a handed-over sample: not the thread's id nor
 * its timestamp, which would keep every child's samples apart in the
 * parent's profile (a server forking a process per connection would fill
 * it with one sample per connection and stack), nor one without a key,
 * which the parser refuses. */
static bool label_kept(const struct profile *p, const struct profile_label *l)
{
	uint32_t len = 0;
	const char *key = profile_string(p, l->key, &len);
	return key != NULL && key[0] != '\0' && rt_strcmp(key, SW_LABEL_THREAD_ID) != 0 &&
	       rt_strcmp(key, SW_LABEL_END_TIMESTAMP) != 0;
}

/* Writes sample i of p (its values in mask); false when it has none. */
static bool put_sample(struct writer *w, const struct profile *p, uint32_t i, uint32_t mask)
{
	struct profile_sample_view v;
	if (!profile_sample_get(p, i, &v))
		return false;
	uint32_t present = 0;
	for (uint32_t s = 0; s < SW_V_COUNT; s++)
		if ((mask & SW_V_BIT(s)) && v.values[s] != 0)
			present |= SW_V_BIT(s);
	if (present == 0)
		return false;
	uint32_t kept = 0;
	for (uint32_t k = 0; k < v.n_labels; k++)
		kept += label_kept(p, &v.labels[k]) ? 1u : 0u;
	put_u32(w, v.depth);
	put_u32(w, kept);
	put_u32(w, present);
	for (uint32_t s = 0; s < SW_V_COUNT; s++)
		if (present & SW_V_BIT(s))
			put(w, &v.values[s], sizeof(int64_t));
	if (v.depth)
		put(w, v.pcs, v.depth * (uint32_t)sizeof(uint64_t));
	for (uint32_t k = 0; k < v.n_labels; k++) {
		const struct profile_label *l = &v.labels[k];
		if (!label_kept(p, l))
			continue;
		uint8_t is_num = l->is_num ? 1u : 0u;
		put(w, &is_num, 1);
		put_string(w, p, l->key);
		if (is_num) {
			put(w, &l->num, sizeof(l->num));
			put_string(w, p, l->num_unit);
		} else {
			put_string(w, p, l->str);
		}
	}
	return true;
}

/* The index of a free slot of `in`, claimed for token; -1 when all are
 * taken. */
static int claim(struct family_inbox *in, uint64_t token)
{
	uint32_t start = atomic_fetch_add(&in->hint, 1u);
	for (uint32_t k = 0; k < FAMILY_SLOTS; k++) {
		uint32_t i = (start + k) % FAMILY_SLOTS;
		struct family_slot *s = &in->slots[i];
		uint64_t expect = SLOT_FREE;
		if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_FREE &&
		    atomic_compare_exchange_strong(&s->state, &expect, SLOT_STATE(token, SLOT_WRITING)))
			return (int)i;
	}
	return -1;
}

/* The slots of one delivery, the head first. */
struct group {
	uint32_t slot[FAMILY_GROUP_SLOTS];
	uint32_t count;
};

/* Frees the group's slots that still hold token (as the child writing,
 * waiting or committed): a delivery taken back. */
static void give_back(struct family_inbox *in, const struct group *g, uint64_t token)
{
	static const uint64_t tags[] = { SLOT_WRITING, SLOT_TAIL, SLOT_READY };
	for (uint32_t k = 0; k < g->count; k++) {
		struct family_slot *s = &in->slots[g->slot[k]];
		for (uint32_t t = 0; t < RT_ARRAY_LEN(tags); t++) {
			uint64_t held = SLOT_STATE(token, tags[t]);
			if (atomic_compare_exchange_strong(&s->state, &held, SLOT_FREE))
				break;
		}
	}
}

/* Claims the group's next slot and starts its payload (the head's room
 * for its tails' indices, or a tail's head index); false when no slot is
 * free. */
static bool group_add(struct family_inbox *in, struct group *g, uint64_t token, struct writer *w)
{
	int i = claim(in, token);
	if (i < 0)
		return false;
	g->slot[g->count++] = (uint32_t)i;
	atomic_fetch_add(&in->events, 1);
	*w = (struct writer){ in->slots[i].payload, 0, SLOT_PAYLOAD, false };
	if (g->count == 1) {
		uint8_t room[HEAD_PREFIX_BYTES] = { 0 };
		put(w, room, sizeof(room));
	} else {
		put_u32(w, g->slot[0]);
	}
	return true;
}

/* Ends the group's last slot: its payload's length and samples. */
static void group_seal(struct family_inbox *in, const struct group *g, const struct writer *w,
		       uint32_t samples)
{
	struct family_slot *s = &in->slots[g->slot[g->count - 1]];
	s->len = w->len;
	s->n_samples = samples;
}

/* Writes the samples of p into as many slots as they need (at most
 * FAMILY_GROUP_SLOTS, whole samples in each); the claimed slots are in g
 * whatever the result. */
static enum family_result group_write(struct family_inbox *in, struct group *g, uint64_t token,
			const struct profile *p, uint32_t n, uint32_t value_mask)
{
	struct writer w;
	if (!group_add(in, g, token, &w))
		return FAMILY_NO_SLOT;
	uint32_t i = 0, in_slot = 0;
	/* Each turn writes a sample or opens a slot. */
	for (uint32_t turn = 0; i < n && turn < n + FAMILY_GROUP_SLOTS; turn++) {
		uint32_t mark = w.len;
		bool wrote = put_sample(&w, p, i, value_mask);
		if (!w.full) {
			in_slot += wrote ? 1u : 0u;
			i++;
			continue;
		}
		/* The sample goes whole into the next slot. */
		w.len = mark;
		if (in_slot == 0 || g->count == FAMILY_GROUP_SLOTS)
			return FAMILY_TOO_BIG; /* a sample bigger than a slot, or a group */
		group_seal(in, g, &w, in_slot);
		if (!group_add(in, g, token, &w))
			return FAMILY_NO_SLOT;
		in_slot = 0;
	}
	if (i < n)
		return FAMILY_TOO_BIG;
	group_seal(in, g, &w, in_slot);
	struct family_slot *head = &in->slots[g->slot[0]];
	uint32_t tails = g->count - 1;
	rt_memcpy(head->payload, &tails, sizeof(tails));
	rt_memcpy(head->payload + 4, &g->slot[1], tails * sizeof(uint32_t));
	return FAMILY_HANDED;
}

/* Publishes a written group: its tails wait for their head, whose commit
 * hands the whole group over at once. */
static enum family_result group_commit(struct family_inbox *in, const struct group *g, uint64_t token)
{
	for (uint32_t k = 1; k < g->count; k++) {
		uint64_t mine = SLOT_STATE(token, SLOT_WRITING);
		if (!atomic_compare_exchange_strong(&in->slots[g->slot[k]].state, &mine,
						    SLOT_STATE(token, SLOT_TAIL)))
			return FAMILY_TOO_SLOW;
	}
	uint64_t mine = SLOT_STATE(token, SLOT_WRITING);
	if (!atomic_compare_exchange_strong(&in->slots[g->slot[0]].state, &mine,
					    SLOT_STATE(token, SLOT_READY)))
		return FAMILY_TOO_SLOW;
	atomic_fetch_add(&in->events, 1);
	/* The parent may have made its last drain meanwhile: the group is
	 * taken back if its head is still there (it then never reads it). */
	if (atomic_load(&in->closed)) {
		uint64_t ready = SLOT_STATE(token, SLOT_READY);
		if (atomic_compare_exchange_strong(&in->slots[g->slot[0]].state, &ready, SLOT_FREE))
			return FAMILY_CLOSED;
	}
	return FAMILY_HANDED;
}

const char *family_result_text(enum family_result r)
{
	switch (r) {
	case FAMILY_HANDED:
		return "";
	case FAMILY_NO_INBOX:
		return "no parent's inbox open";
	case FAMILY_NO_SLOT:
		return "too few free slots in the parent's inbox";
	case FAMILY_TOO_BIG:
		return "more samples than a group of slots holds";
	case FAMILY_TOO_SLOW:
		return "a slot reclaimed before the delivery was committed";
	case FAMILY_CLOSED:
		return "the parent's inbox closed meanwhile";
	}
	return "?";
}

enum family_result family_deliver(const struct profile *p, uint32_t value_mask)
{
	struct family_inbox *in = fam.parent;
	if (!family_can_deliver() || p == NULL) {
		fam.stats.refused++;
		return FAMILY_NO_INBOX;
	}
	uint32_t n = profile_sample_count(p);
	if (n > RECORD_MAX_SAMPLES) {
		fam.stats.refused++;
		return FAMILY_TOO_BIG;
	}
	uint64_t token = atomic_fetch_add(&in->tokens, 1) + 1;
	struct group g = { .count = 0 };
	enum family_result r = group_write(in, &g, token, p, n, value_mask);
	if (r == FAMILY_HANDED)
		r = group_commit(in, &g, token);
	if (r != FAMILY_HANDED) {
		give_back(in, &g, token);
		fam.stats.refused++;
		return r;
	}
	fam.stats.delivered++;
	return FAMILY_HANDED;
}

/* ---- the owner ---- */

struct reader {
	const uint8_t *p;
	uint32_t len, pos;
	bool bad;
};

static const void *take(struct reader *r, uint32_t n)
{
	if (r->bad || n > r->len - r->pos) {
		r->bad = true;
		return NULL;
	}
	const void *at = r->p + r->pos;
	r->pos += n;
	return at;
}

/* Copies the next n bytes into dst (left as it was when they are missing). */
static void take_into(struct reader *r, void *dst, uint32_t n)
{
	const void *at = take(r, n);
	if (at)
		rt_memcpy(dst, at, n);
}

static uint32_t take_u32(struct reader *r)
{
	uint32_t v = 0;
	take_into(r, &v, sizeof(v));
	return v;
}

static int64_t take_i64(struct reader *r)
{
	int64_t v = 0;
	take_into(r, &v, sizeof(v));
	return v;
}

/* A NUL-terminated string of the record (in the private copy). */
static const char *take_string(struct reader *r)
{
	uint32_t len = take_u32(r);
	if (r->bad || len >= r->len)
		return (r->bad = true, NULL);
	const char *s = take(r, len + 1u);
	if (s == NULL || s[len] != '\0')
		return (r->bad = true, NULL);
	return s;
}

bool family_parse_record(struct recorder *rec, const uint8_t *data, uint32_t len, uint32_t n_samples,
			 uint64_t *samples)
{
	struct reader r = { data, len, 0, false };
	for (uint32_t i = 0; i < n_samples; i++) {
		uint32_t depth = take_u32(&r), n_labels = take_u32(&r), mask = take_u32(&r);
		if (r.bad || depth > RECORD_MAX_DEPTH || n_labels > SW_MAX_LABELS ||
		    (mask & ~(uint32_t)((1u << SW_V_COUNT) - 1u)) != 0)
			return false;
		struct sw_value values[SW_V_COUNT];
		uint32_t n_values = 0;
		for (uint32_t s = 0; s < SW_V_COUNT; s++)
			if (mask & SW_V_BIT(s))
				values[n_values++] = (struct sw_value){ (enum sw_value_slot)s, take_i64(&r) };
		const void *pcs = depth ? take(&r, depth * (uint32_t)sizeof(uint64_t)) : NULL;
		if (r.bad)
			return false;
		if (depth)
			rt_memcpy(fam.pcs, pcs, depth * sizeof(uint64_t));
		struct sw_label labels[SW_MAX_LABELS];
		for (uint32_t k = 0; k < n_labels; k++) {
			const uint8_t *is_num = take(&r, 1);
			const char *key = take_string(&r);
			if (r.bad || key == NULL || key[0] == '\0')
				return false;
			labels[k] = (struct sw_label){ key, NULL, 0, NULL };
			if (*is_num) {
				labels[k].num = take_i64(&r);
				const char *unit = take_string(&r);
				labels[k].num_unit = unit != NULL && unit[0] ? unit : NULL;
			} else {
				labels[k].str = take_string(&r);
			}
			if (r.bad)
				return false;
		}
		struct sw_sample smp = { fam.pcs, depth, values, n_values, labels, n_labels };
		(void)recorder_add_untimed(rec, &smp);
		(*samples)++;
	}
	return r.pos == r.len;
}

/* Whether tail slot i (state st) has lost its head: the head's slot no
 * longer holds the tail's token, being written or committed. */
static bool tail_orphaned(struct family_inbox *in, uint32_t i, uint64_t st)
{
	uint32_t h = 0;
	rt_memcpy(&h, in->slots[i].payload, sizeof(h));
	if (h >= FAMILY_SLOTS)
		return true;
	uint64_t head = atomic_load(&in->slots[h].state);
	uint64_t tag = head & SLOT_TAG_MASK;
	return SLOT_TOKEN(head) != SLOT_TOKEN(st) || (tag != SLOT_WRITING && tag != SLOT_READY);
}

/* Copies taken slot i out, frees it and adds its samples (after `skip`
 * prefix bytes) to rec; false when malformed. */
static bool take_slot_samples(struct family_inbox *in, uint32_t i, uint32_t skip, struct recorder *rec)
{
	struct family_slot *s = &in->slots[i];
	uint32_t len = s->len, n = s->n_samples;
	bool fits = len <= SLOT_PAYLOAD && len >= skip && n <= RECORD_MAX_SAMPLES;
	if (fits)
		rt_memcpy(fam.copy, s->payload, len);
	atomic_store(&s->state, SLOT_FREE);
	uint64_t samples = 0;
	bool ok = fits && family_parse_record(rec, fam.copy + skip, len - skip, n, &samples);
	fam.stats.drained_samples += samples;
	return ok;
}

/* Takes the group whose committed head is slot h (state st): every tail
 * first, so that all of it or none is added.  Returns the slots taken. */
static uint32_t take_group(struct family_inbox *in, uint32_t h, uint64_t st, struct recorder *rec)
{
	struct family_slot *head = &in->slots[h];
	if (!atomic_compare_exchange_strong(&head->state, &st, SLOT_STATE(SLOT_TOKEN(st), SLOT_TAKEN)))
		return 0; /* the child took it back */
	uint32_t prefix[FAMILY_GROUP_SLOTS];
	rt_memcpy(prefix, head->payload, sizeof(prefix));
	uint32_t tails = prefix[0], got = 0;
	bool whole = tails < FAMILY_GROUP_SLOTS && head->len >= HEAD_PREFIX_BYTES;
	for (uint32_t k = 0; whole && k < tails; k++) {
		uint32_t t = prefix[1 + k];
		uint64_t waiting = SLOT_STATE(SLOT_TOKEN(st), SLOT_TAIL);
		whole = t < FAMILY_SLOTS && t != h &&
			atomic_compare_exchange_strong(&in->slots[t].state, &waiting,
						       SLOT_STATE(SLOT_TOKEN(st), SLOT_TAKEN));
		got += whole ? 1u : 0u;
	}
	if (!whole) {
		/* Not as the child wrote it: dropped whole. */
		for (uint32_t k = 0; k < got; k++)
			atomic_store(&in->slots[prefix[1 + k]].state, SLOT_FREE);
		atomic_store(&head->state, SLOT_FREE);
		fam.stats.malformed++;
		return 1u + got;
	}
	fam.stats.groups++;
	bool ok = take_slot_samples(in, h, HEAD_PREFIX_BYTES, rec);
	for (uint32_t k = 0; k < tails; k++)
		ok = take_slot_samples(in, prefix[1 + k], TAIL_PREFIX_BYTES, rec) && ok;
	if (!ok)
		fam.stats.malformed++;
	return 1u + tails;
}

/* Takes slot i's group if slot i is a committed head; reclaims slot i if
 * its writer has held it too long (a tail only once its head is gone).
 * Caller holds drain_lock.  Returns the slots taken. */
static uint32_t drain_slot(struct family_inbox *in, uint32_t i, struct recorder *rec, uint64_t now)
{
	struct family_slot *s = &in->slots[i];
	uint64_t st = atomic_load(&s->state);
	uint64_t tag = st & SLOT_TAG_MASK;
	if (tag == SLOT_WRITING || tag == SLOT_TAIL) {
		if (fam.seen_token[i] != st) {
			fam.seen_token[i] = st;
			fam.seen_ns[i] = now;
		} else if (now - fam.seen_ns[i] > FAMILY_ABANDON_NS &&
			   (tag == SLOT_WRITING || tail_orphaned(in, i, st)) &&
			   atomic_compare_exchange_strong(&s->state, &st, SLOT_FREE)) {
			fam.stats.abandoned++;
			return 0;
		}
		fam.writing_seen = true;
		return 0;
	}
	if (tag != SLOT_READY)
		return 0;
	uint32_t taken = take_group(in, i, st, rec);
	fam.stats.drained += taken;
	return taken;
}

/* This process's own inbox, or NULL: a process cloned without our fork
 * handlers (a raw clone) still points at its parent's and must not drain
 * or close it. */
static struct family_inbox *own_inbox(void)
{
	struct family_inbox *in = fam.own;
	return in != NULL && atomic_load(&in->owner) == (int)sys_getpid() ? in : NULL;
}

/* Takes every delivered slot of `in` into rec; returns how many.  The
 * slots are scanned only when a child claimed or filled one since the
 * last scan, or that scan met one being written: the sampler of every
 * process that ever forked drains at each wake.  Caller holds drain_lock. */
static uint32_t drain_inbox(struct family_inbox *in, struct recorder *rec)
{
	uint64_t events = atomic_load(&in->events);
	if (events == fam.scanned_events && !fam.writing_seen)
		return 0;
	fam.scanned_events = events;
	fam.writing_seen = false;
	uint64_t now = rt_monotonic_ns();
	uint32_t taken = 0;
	for (uint32_t i = 0; i < FAMILY_SLOTS; i++)
		taken += drain_slot(in, i, rec, now);
	return taken;
}

uint32_t family_drain(struct recorder *rec)
{
	struct family_inbox *in = own_inbox();
	if (in == NULL || rec == NULL)
		return 0;
	rt_mutex_lock(&fam.drain_lock);
	uint32_t taken = drain_inbox(in, rec);
	rt_mutex_unlock(&fam.drain_lock);
	return taken;
}

void family_close(struct recorder *rec, uint64_t wait_ns)
{
	struct family_inbox *in = own_inbox();
	if (in == NULL)
		return;
	atomic_store(&in->closed, 1);
	uint64_t deadline = rt_monotonic_ns() + wait_ns;
	for (uint32_t round = 0; round < 1000u; round++) {
		rt_mutex_lock(&fam.drain_lock);
		if (rec != NULL)
			(void)drain_inbox(in, rec);
		bool writing = fam.writing_seen;
		rt_mutex_unlock(&fam.drain_lock);
		if (!writing || rt_monotonic_ns() >= deadline)
			break;
		(void)rt_sleep_ns(1000000);
	}
}

void family_before_exec(void)
{
	struct family_inbox *in = own_inbox();
	if (in != NULL)
		atomic_store(&in->closed, 1);
}

void family_get_stats(struct family_stats *out)
{
	rt_mutex_lock(&fam.drain_lock);
	*out = fam.stats;
	rt_mutex_unlock(&fam.drain_lock);
}
