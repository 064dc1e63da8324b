/* Lock contention sampling, the held-lock table and lock names (lock.h).
 *
 * Runs on the host's threads inside pthread_mutex_lock/unlock: never calls
 * a host function and takes no lock of its own (the held table is
 * lock-free), so a fork child inherits nothing that can block.  The
 * recorder's lock is the only one reached, and only for sampled events.
 */
#include "collect/lock.h"
#include "collect/collector.h"

#include "collect/exception.h"
#include "collect/sample.h"
#include "rt/sys.h"
#include "symbols/data_symbols.h"
#include "unwind/unwind.h"

#define LOCK_MAX_FRAMES 128u
/* Frames of our own (hook, lock_contended, capture) searched for the hook's
 * return address before the caller's stack starts. */
#define LOCK_NAME_CAP 96u

/* Held table: checked acquisitions not yet released. */
#define HELD_SLOTS 1024u /* power of two */
#define HELD_PROBES 8u
/* An entry older than this is taken for a lock released where we cannot
 * see it (by another thread, or never: its thread exited) and is evicted:
 * to make room, and by the sampler tick, which sweeps HELD_SWEEP slots
 * (the whole table every 0.64 s) so that such an entry does not keep every
 * unlock of the process off its fast path. */
#define HELD_STALE_NS (60ull * RT_NS_PER_SEC)
#define HELD_SWEEP 16u


struct lock_hot lock_hot;

struct held_slot {
	_Atomic uintptr_t lock;  /* 0: free; claimed by the inserting thread */
	_Atomic uintptr_t owner; /* thread pointer once filled; 0 while claimed */
	uint64_t since_ns;
	uint32_t weight; /* inverse of the acquisition's chance of being checked */
	uint32_t pad;
};

static struct {
	_Atomic(struct recorder *) rec;
	atomic_ullong mean_ns;
	atomic_uint check_every_max; /* STOWAWAY_LOCK_CHECK_EVERY, a power of two */
	uint32_t max_frames;
	_Atomic(struct held_slot *) held;
	_Atomic(const struct data_symbol_index *) index;
	atomic_ullong samples;
	atomic_ullong held_dropped;
	atomic_ullong record_failed;
	uint32_t sweep_pos; /* the sampler thread's */
} st;

/* ---- sampling ---- */

bool lock_sample_decide(uint64_t wait_ns, uint64_t mean_ns, uint64_t u)
{
	if (wait_ns == 0)
		return false;
	double w = sample_weight(wait_ns, mean_ns); /* 1/p >= 1 */
	if (w <= 1.0)
		return true;
	/* u / 2^64 < p */
	return (double)u * w < 18446744073709551616.0;
}

uint64_t lock_wait_mean(uint64_t sample_ns, uint32_t every)
{
	uint64_t m = sample_ns / (every ? every : 1u);
	return m ? m : 1u;
}

/* 1/ln(1 - 2^-j) for K = 2^j, j >= 1: one logarithm per countdown drawn
 * instead of two (filled by lock_collector_start; 0: compute). */
#define GEO_SCALES 21u /* K up to LOCK_MAX_CHECK_EVERY = 2^20 */
static double geo_scale[GEO_SCALES];

static uint32_t log2_u32(uint32_t x) { return 31u - (uint32_t)__builtin_clz(x | 1u); }

static double geo_scale_of(uint32_t j)
{
	return 1.0 / rt_ln(1.0 - 1.0 / (double)(1ull << j));
}

int32_t lock_draw_countdown(uint32_t every, double u)
{
	if (every <= 1u)
		return 1;
	uint32_t j = RT_MIN(log2_u32(every), GEO_SCALES - 1u);
	double scale = geo_scale[j];
	if (scale == 0.0)
		scale = geo_scale_of(j);
	/* P(countdown > n) = P(u <= (1 - 1/K)^n) = (1 - 1/K)^n */
	double x = rt_ln(u) * scale; /* both logarithms <= 0 */
	if (!(x < 2e9))
		return INT32_MAX;
	return (int32_t)x + 1;
}

/* ---- which acquisitions are checked (lock.h) ---- */

uint32_t lock_check_begin(uint32_t epoch)
{
	uintptr_t tp = rt_thread_pointer();
	struct alloc_thread *home = &alloc_threads[alloc_thread_hash(tp)];
	struct alloc_thread *t = alloc_thread_self();
	if (!t)
		return 1; /* no slot: every acquisition is checked */
	if (t->lock_epoch != epoch) {
		/* First acquisition since a tick: checked for certain. */
		t->lock_epoch = epoch;
		return 1;
	}
	/* lock_skip_check() already counted this acquisition down in a slot
	 * at its home position (and only there). */
	if (t != home && --t->lock_countdown > 0)
		return 0;
	return t->lock_every ? t->lock_every : 1u;
}

uint32_t lock_next_every(uint32_t every, uint64_t gap_ns, uint32_t max)
{
	uint32_t k = every ? every : 1u;
	if (gap_ns < LOCK_CHECK_INTERVAL_NS / 2u) {
		if (k < max)
			k *= 2u;
	} else {
		/* Scaled down by the ratio, so one long gap (a thread that
		 * started blocking) brings K down at once. */
		for (uint32_t i = 0; i < 32u && k > 1u && gap_ns > 2u * LOCK_CHECK_INTERVAL_NS; i++) {
			k /= 2u;
			gap_ns /= 2u;
		}
	}
	if (k > max)
		k = max ? max : 1u;
	return k;
}

uint64_t lock_check_end(uint64_t now_ns)
{
	if (now_ns == 0)
		now_ns = rt_monotonic_ns();
	struct alloc_thread *t = alloc_thread_self();
	if (!t)
		return now_ns;
	/* A first check (no previous time) or a clock that went back: no
	 * change. */
	uint64_t gap = t->lock_last_ns && now_ns > t->lock_last_ns ? now_ns - t->lock_last_ns
								     : LOCK_CHECK_INTERVAL_NS;
	t->lock_last_ns = now_ns;
	uint32_t k = lock_next_every(t->lock_every, gap,
				     atomic_load_explicit(&st.check_every_max, memory_order_relaxed));
	t->lock_every = k;
	t->lock_countdown = lock_draw_countdown(k, k > 1u ? rt_rng_uniform(&t->rng) : 1.0);
	return now_ns;
}

uint64_t lock_collector_period(void)
{
	uint64_t m = atomic_load_explicit(&st.mean_ns, memory_order_relaxed);
	return m ? m : LOCK_DEFAULT_SAMPLE_NS;
}

/* ---- lock names ---- */

void lock_name_format(const struct data_symbol_index *idx, uint64_t addr, char *out, size_t cap)
{
	const struct data_symbol *s = data_symbols_find(idx, addr);
	if (!s || s->name >= idx->names.len) {
		rt_snprintf(out, cap, "0x%llx", (unsigned long long)addr);
		return;
	}
	const char *name = (const char *)idx->names.data + s->name;
	size_t len = 0;
	bool plain = true;
	if (rt_starts_with(name, "_Z")) {
		const char *m = name + 2;
		if (*m == 'L') /* internal linkage */
			m++;
		plain = !exception_demangle(m, out, cap);
	}
	if (plain)
		rt_strlcpy(out, name, cap);
	len = rt_strnlen(out, cap);
	if (addr != s->start && len < cap)
		rt_snprintf(out + len, cap - len, "+0x%llx", (unsigned long long)(addr - s->start));
}

/* ---- the held table ---- */

static uint32_t held_home(uintptr_t lock, uintptr_t tp)
{
	return (uint32_t)(((uint64_t)(lock ^ (tp >> 4)) * RT_HASH_MUL64) >> 56) &
	       (HELD_SLOTS - 1u);
}

/* Frees slot s if it still belongs to `owner`; true for the one caller that
 * succeeds. */
static bool held_take(struct held_slot *s, uintptr_t owner)
{
	uintptr_t o = owner;
	if (!atomic_compare_exchange_strong(&s->owner, &o, 0))
		return false;
	atomic_fetch_sub(&lock_hot.held, 1);
	return true;
}

static void held_clear(struct held_slot *s) { atomic_store_explicit(&s->lock, 0, memory_order_release); }

static void held_evict_stale(struct held_slot *table, uint32_t first, uint32_t n, uint64_t now)
{
	for (uint32_t i = 0; i < n; i++) {
		struct held_slot *s = &table[(first + i) & (HELD_SLOTS - 1u)];
		uintptr_t o = atomic_load_explicit(&s->owner, memory_order_acquire);
		if (o != 0 && now > s->since_ns && now - s->since_ns > HELD_STALE_NS &&
		    held_take(s, o))
			held_clear(s);
	}
}

static void held_insert(uintptr_t lock, uint64_t since_ns, uint32_t weight)
{
	struct held_slot *table = atomic_load_explicit(&st.held, memory_order_acquire);
	if (!table)
		return;
	uintptr_t tp = rt_thread_pointer();
	uint32_t home = held_home(lock, tp);
	for (uint32_t round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < HELD_PROBES; i++) {
			struct held_slot *s = &table[(home + i) & (HELD_SLOTS - 1u)];
			uintptr_t expect = 0;
			if (!atomic_compare_exchange_strong(&s->lock, &expect, lock))
				continue;
			s->weight = weight;
			s->since_ns = since_ns;
			struct alloc_thread *self = alloc_thread_self();
			if (self)
				self->lock_held++;
			atomic_fetch_add(&lock_hot.held, 1);
			atomic_store_explicit(&s->owner, tp, memory_order_release);
			return;
		}
		if (round == 0)
			held_evict_stale(table, home, HELD_PROBES, rt_monotonic_ns());
	}
	atomic_fetch_add(&st.held_dropped, 1);
}

/* The calling thread's entry for lock, or NULL. */
static struct held_slot *held_find(uintptr_t lock, uintptr_t tp)
{
	struct held_slot *table = atomic_load_explicit(&st.held, memory_order_acquire);
	if (!table)
		return NULL;
	uint32_t home = held_home(lock, tp);
	for (uint32_t i = 0; i < HELD_PROBES; i++) {
		struct held_slot *s = &table[(home + i) & (HELD_SLOTS - 1u)];
		if (atomic_load_explicit(&s->lock, memory_order_relaxed) == lock &&
		    atomic_load_explicit(&s->owner, memory_order_acquire) == tp)
			return s;
	}
	return NULL;
}

void lock_thread_started(struct alloc_thread *slot)
{
	if (!slot || slot->lock_held == 0)
		return;
	/* A dead thread with the same thread pointer left checked holds (it
	 * exited holding a lock, or another thread released it): they are not
	 * this thread's, and must not match its unlocks. */
	uintptr_t tp = atomic_load(&slot->key);
	struct held_slot *table = atomic_load_explicit(&st.held, memory_order_acquire);
	for (uint32_t i = 0; table && i < HELD_SLOTS; i++)
		if (atomic_load_explicit(&table[i].owner, memory_order_acquire) == tp &&
		    held_take(&table[i], tp))
			held_clear(&table[i]);
	slot->lock_held = 0;
}

bool lock_held_by_self(const void *lock)
{
	uintptr_t tp = rt_thread_pointer();
	/* The thread's own count first: other threads' sampled holds are what
	 * usually made the global count non-zero.  (A hold evicted as stale
	 * stays counted: that thread searches the table from then on.) */
	const struct alloc_thread *t = &alloc_threads[alloc_thread_hash(tp)];
	if (atomic_load_explicit(&t->key, memory_order_relaxed) == tp && t->lock_held == 0)
		return false;
	return held_find((uintptr_t)lock, tp) != NULL;
}

/* ---- robust mutexes ---- */

#define ROBUST_SLOTS 4096u /* power of two */
#define ROBUST_PROBES 32u
#define ROBUST_TOMBSTONE ((uintptr_t)1)

static _Atomic uintptr_t robust_set[ROBUST_SLOTS];

static uint32_t robust_home(uintptr_t m)
{
	return (uint32_t)(((uint64_t)m * RT_HASH_MUL64) >> 52) & (ROBUST_SLOTS - 1u);
}

bool lock_robust_is(const void *mutex)
{
	if (atomic_load_explicit(&lock_hot.robust, memory_order_acquire) >= LOCK_ROBUST_ALL)
		return true;
	uintptr_t m = (uintptr_t)mutex;
	uint32_t h = robust_home(m);
	for (uint32_t i = 0; i < ROBUST_PROBES; i++) {
		uintptr_t k = atomic_load_explicit(&robust_set[(h + i) & (ROBUST_SLOTS - 1u)],
						   memory_order_acquire);
		if (k == m)
			return true;
		if (k == 0)
			return false;
	}
	return false;
}

void lock_robust_add(const void *mutex)
{
	uintptr_t m = (uintptr_t)mutex;
	if (m <= ROBUST_TOMBSTONE || lock_robust_is(mutex))
		return;
	uint32_t h = robust_home(m);
	for (uint32_t i = 0; i < ROBUST_PROBES; i++) {
		_Atomic uintptr_t *slot = &robust_set[(h + i) & (ROBUST_SLOTS - 1u)];
		uintptr_t k = atomic_load(slot);
		if ((k == 0 || k == ROBUST_TOMBSTONE) && atomic_compare_exchange_strong(slot, &k, m)) {
			atomic_fetch_add(&lock_hot.robust, 1);
			return;
		}
	}
	/* No room: every mutex acquisition skips the try from now on. */
	atomic_fetch_add(&lock_hot.robust, LOCK_ROBUST_ALL);
	rt_log_once(RT_LOG_WARN, "lock profiler: too many robust mutexes; mutex contention is "
				 "no longer sampled");
}

void lock_robust_remove(const void *mutex)
{
	uintptr_t m = (uintptr_t)mutex;
	uint32_t h = robust_home(m);
	for (uint32_t i = 0; i < ROBUST_PROBES; i++) {
		_Atomic uintptr_t *slot = &robust_set[(h + i) & (ROBUST_SLOTS - 1u)];
		uintptr_t k = m;
		if (atomic_compare_exchange_strong(slot, &k, ROBUST_TOMBSTONE)) {
			atomic_fetch_sub(&lock_hot.robust, 1);
			return;
		}
		if (k == 0)
			return;
	}
}

/* ---- recording ---- */

static void record(const uint64_t *pcs, uint32_t depth, const struct sw_value *values,
		   const char *name, int tid)
{
	struct recorder *rec = atomic_load(&st.rec);
	if (!rec)
		return;
	struct sw_label labels[2] = {
		{ SW_LABEL_LOCK_NAME, name, 0, NULL },
		{ SW_LABEL_THREAD_ID, NULL, tid, NULL },
	};
	struct sw_sample s = { pcs, depth, values, 2, labels, 2 };
	if (recorder_add(rec, &s) != PROFILE_ADD_OK)
		atomic_fetch_add(&st.record_failed, 1);
}

static void local_rng(struct rt_rng *r)
{
	r->s[0] = sample_random_u64();
	r->s[1] = sample_random_u64() | 1u;
}

/* The caller's stack from ra on, and the lock's name. */
static uint32_t capture(const void *lock, uintptr_t ra, uint64_t *buf, uint32_t *depth,
			char *name, size_t name_cap)
{
	uint32_t cap = RT_MIN(st.max_frames, LOCK_MAX_FRAMES) + SAMPLE_OWN_FRAMES;
	uint32_t first = sample_capture_caller(ra, 0, 0, buf, cap, depth);
	lock_name_format(atomic_load_explicit(&st.index, memory_order_acquire), (uintptr_t)lock,
			 name, name_cap);
	return first;
}

void lock_contended(const void *lock, uint64_t wait_ns, uint32_t every, uintptr_t ra)
{
	uint64_t mean = lock_wait_mean(lock_collector_period(), every);
	if (!lock_sample_decide(wait_ns, mean, sample_random_u64()))
		return;
	/* Checked with probability 1/every, then sampled with 1/w. */
	double weight = (double)(every ? every : 1u) * sample_weight(wait_ns, mean);
	atomic_fetch_add(&st.samples, 1);
	uint64_t buf[LOCK_MAX_FRAMES + SAMPLE_OWN_FRAMES];
	uint32_t depth = 0;
	char name[LOCK_NAME_CAP];
	uint32_t first = capture(lock, ra, buf, &depth, name, sizeof(name));
	struct rt_rng rng;
	local_rng(&rng);
	struct sw_value values[2] = {
		{ SW_V_LOCK_ACQUIRE, sample_round_random(&rng, weight) },
		{ SW_V_LOCK_ACQUIRE_WAIT, sample_round_random(&rng, weight * (double)wait_ns) },
	};
	record(buf + first, depth, values, name, (int)sys_gettid());
}

void lock_acquired(const void *lock, uint64_t acquired_ns, uint32_t every)
{
	held_insert((uintptr_t)lock, acquired_ns, every ? every : 1u);
}

void lock_released(const void *lock, uint64_t released_ns, uintptr_t ra)
{
	uintptr_t tp = rt_thread_pointer();
	struct held_slot *s = held_find((uintptr_t)lock, tp);
	if (!s || !held_take(s, tp))
		return;
	struct alloc_thread *self = alloc_thread_self();
	if (self && self->lock_held > 0)
		self->lock_held--;
	uint64_t hold = released_ns > s->since_ns ? released_ns - s->since_ns : 0;
	uint32_t every = s->weight;
	held_clear(s);
	uint64_t mean = lock_wait_mean(lock_collector_period(), every);
	if (!lock_sample_decide(hold, mean, sample_random_u64()))
		return;
	double weight = (double)every * sample_weight(hold, mean);
	uint64_t buf[LOCK_MAX_FRAMES + SAMPLE_OWN_FRAMES];
	uint32_t depth = 0;
	char name[LOCK_NAME_CAP];
	uint32_t first = capture(lock, ra, buf, &depth, name, sizeof(name));
	struct rt_rng rng;
	local_rng(&rng);
	struct sw_value values[2] = {
		{ SW_V_LOCK_RELEASE, sample_round_random(&rng, weight) },
		{ SW_V_LOCK_RELEASE_HOLD, sample_round_random(&rng, weight * (double)hold) },
	};
	record(buf + first, depth, values, name, (int)sys_gettid());
}

/* ---- the collector ---- */

int lock_collector_start(const struct sw_config *cfg, struct recorder *rec)
{
	if (!(cfg->kinds & SW_KIND_BIT(SW_KIND_LOCK)))
		return -EINVAL;
	uint32_t mean = cfg->lock_sample_ns;
	uint32_t every = RT_MAX(1u, RT_MIN(cfg->lock_check_every, LOCK_MAX_CHECK_EVERY));
	every = 1u << log2_u32(every); /* a power of two, rounded down */
	for (uint32_t j = 1; j < GEO_SCALES; j++)
		if (geo_scale[j] == 0.0)
			geo_scale[j] = geo_scale_of(j);
	if (!atomic_load(&st.held)) {
		struct held_slot *t = rt_pages_alloc(HELD_SLOTS * sizeof(struct held_slot));
		if (!t)
			return -ENOMEM;
		atomic_store(&st.held, t);
	}
	sample_random_seed();
	/* Built once: a hook may be reading it at any time. */
	if (!atomic_load(&st.index)) {
		struct data_symbol_index *idx = data_symbols_build();
		if (idx)
			atomic_store_explicit(&st.index, idx, memory_order_release);
		else
			rt_warn("lock profiler: out of memory indexing data symbols; locks are named "
				"by address");
	}
	atomic_store(&st.mean_ns, mean);
	atomic_store(&st.check_every_max, every);
	st.max_frames = cfg->max_frames ? cfg->max_frames : 64u;
	atomic_store(&st.rec, rec);
	uint32_t zero = 0;
	(void)atomic_compare_exchange_strong(&lock_hot.epoch, &zero, 1u);
	const struct data_symbol_index *idx = atomic_load(&st.index);
	rt_info("lock profiler on: one sample per %u ns of contended waiting on average, "
		"at most one acquisition in %u checked per thread (%u data symbols for lock "
		"names)", mean, every, idx ? idx->n : 0u);
	return 0;
}

void lock_collector_stop(void) { atomic_store(&lock_hot.epoch, 0); }

void lock_collector_tick(void)
{
	uint32_t e = atomic_load(&lock_hot.epoch);
	/* Never 0 (off), and never turns sampling back on after a stop. */
	if (e != 0)
		(void)atomic_compare_exchange_strong(&lock_hot.epoch, &e, e + 1u ? e + 1u : 1u);
	struct held_slot *table = atomic_load_explicit(&st.held, memory_order_acquire);
	if (!table || atomic_load_explicit(&lock_hot.held, memory_order_relaxed) == 0)
		return;
	held_evict_stale(table, st.sweep_pos, HELD_SWEEP, rt_monotonic_ns());
	st.sweep_pos = (st.sweep_pos + HELD_SWEEP) & (HELD_SLOTS - 1u);
}

void lock_collector_after_fork_child(void)
{
	/* Holds recorded by the parent's threads can never be released here. */
	struct held_slot *table = atomic_load(&st.held);
	if (table)
		rt_memset(table, 0, HELD_SLOTS * sizeof(struct held_slot));
}

static int64_t lock_period(const struct sw_config *cfg, enum sw_kind kind)
{
	RT_UNUSED(cfg);
	RT_UNUSED(kind);
	return (int64_t)lock_collector_period();
}

const struct collector lock_collector = {
	.name = "lock",
	.kinds = SW_KIND_BIT(SW_KIND_LOCK),
	.start = lock_collector_start,
	.stop = lock_collector_stop,
	.after_fork_child = lock_collector_after_fork_child,
	.tick = lock_collector_tick,
	.period = lock_period,
};
