/* Allocation sampling, the live-heap table and its snapshot (alloc.h).
 *
 * Runs on the host's threads inside malloc: never calls the host allocator
 * (our memory comes from rt_malloc / rt_pages_alloc), and the locks taken
 * here are our own.  A hook of the same thread can only reach them again
 * nested (a signal handler calling malloc), and nested calls only forward.
 */
#include "collect/alloc.h"
#include "collect/collector.h"
#include "collect/context.h"
#include "collect/sample.h"
#include "rt/host.h"
#include "rt/sys.h"
#include "symbols/symbols.h"
#include "unwind/unwind.h"

#define ALLOC_MAX_FRAMES 128u
/* Frames alloc_sample_skipping may leave out. */
#define ALLOC_MAX_SKIP 1u
/* A measured sample longer than this was preempted or interrupted. */
#define ALLOC_COST_PREEMPTED_NS 1000000u
/* A thread finding its slots taken looks for an exited thread's slot once
 * in this many tries (each look is a system call per slot). */
#define RECLAIM_EVERY 1024u
#define LIVE_SCAN_CAP (ALLOC_LIVE_SLOTS)

/* Weak: the unit tests link the collector without the hooks (and never
 * allocate through alloc_hot); the library has them. */
#pragma weak alloc_boot_malloc
#pragma weak alloc_boot_free
#pragma weak alloc_boot_calloc
#pragma weak alloc_boot_realloc
_Alignas(64) struct alloc_hot alloc_hot = {
	.next_malloc = alloc_boot_malloc, .next_free = alloc_boot_free,
	.next_calloc = alloc_boot_calloc, .next_realloc = alloc_boot_realloc,
};
_Static_assert(sizeof(struct alloc_hot) <= 64, "alloc_hot is one cache line");
_Alignas(64) struct alloc_thread alloc_threads[ALLOC_THREAD_SLOTS];
/* Slots claimed in this process (claims are rare: a thread's first
 * allocation), so a fork child resets those and leaves the rest of the
 * table untouched and shared with its parent. */
static atomic_ullong claimed_bits[ALLOC_THREAD_SLOTS / 64u];

static void mark_claimed(const struct alloc_thread *t)
{
	uint32_t i = (uint32_t)(t - alloc_threads);
	atomic_fetch_or(&claimed_bits[i / 64u], 1ull << (i % 64u));
}
_Atomic uint64_t alloc_live_filter[(1u << ALLOC_FILTER_BITS) / 64u];
_Atomic uint64_t alloc_live_filter_small[(1u << ALLOC_FILTER_SMALL_BITS) / 64u];

static struct {
	_Atomic(struct recorder *) rec;
	atomic_ullong rate; /* mean bytes between samples, 0 until started */
	uint32_t max_frames;
	bool record_alloc; /* SW_KIND_ALLOC */
	bool track_live;   /* SW_KIND_HEAP */
	atomic_ullong seed;
	atomic_uint reclaim_tick;

	/* Live table: slots[nslots] keyed by address, linear probing,
	 * deletions by backward shift (no tombstones), doubled when half full.
	 * Guarded by live_lock. */
	struct rt_mutex live_lock;
	struct alloc_live_entry *slots;
	uint32_t nslots; /* power of two, ALLOC_LIVE_MIN_SLOTS..ALLOC_LIVE_SLOTS */
	uint32_t live;
	/* Live entries per small-filter bit (at most ALLOC_LIVE_MAX < 2^16). */
	uint16_t filter_small_count[1u << ALLOC_FILTER_SMALL_BITS];
	struct rt_rng export_rng; /* under live_lock */
	uint32_t inserted_since_fork; /* under live_lock; entries this process added */

	atomic_ullong samples;
	atomic_ullong cost_ns;      /* time spent in the measured samples */
	atomic_ullong clock_pair_ns; /* what reading the clock twice costs (subtracted) */
	atomic_ullong cost_samples; /* samples measured */
	atomic_ullong live_dropped;
	atomic_ullong no_thread_slot;
	atomic_ullong record_failed;
} st;

/* ---- sampling math ---- */

int64_t alloc_draw_countdown(struct rt_rng *rng, uint64_t rate)
{
	double d = rt_rng_exponential(rng, (double)rate);
	const double cap = 4e18;
	if (!(d < cap))
		d = cap;
	int64_t c = (int64_t)d;
	if ((double)c < d)
		c++;
	return c < 1 ? 1 : c;
}

/* ---- per-thread slots ---- */

static uint64_t splitmix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define ALLOC_DEFAULT_RATE 524288u

static uint64_t sample_rate(void)
{
	uint64_t r = atomic_load_explicit(&st.rate, memory_order_acquire);
	return r ? r : ALLOC_DEFAULT_RATE;
}

static void thread_slot_init(struct alloc_thread *t)
{
	uint64_t n = atomic_fetch_add(&st.seed, RT_HASH_MUL64);
	t->rng.s[0] = splitmix(n);
	t->rng.s[1] = splitmix(n ^ 0x5851f42d4c957f2dull);
	if ((t->rng.s[0] | t->rng.s[1]) == 0)
		t->rng.s[0] = 1;
	t->outer_sp = 0;
	t->stack_lo = 0;
	t->stack_hi = 0;
	t->countdown_mean = sample_rate();
	t->countdown = alloc_draw_countdown(&t->rng, t->countdown_mean);
	t->lock_countdown = 0; /* the thread's first acquisition is checked */
	t->lock_epoch = 0;
	t->lock_every = 1;
	t->lock_held = 0;
	t->lock_last_ns = 0;
	atomic_store(&t->tid, (int)sys_gettid());
}

/* A slot whose thread has exited: its tid is gone from our process. */
static bool thread_slot_dead(struct alloc_thread *t, long pid)
{
	int tid = atomic_load(&t->tid);
	return tid > 0 && t->outer_sp == 0 && sys_tgkill((int)pid, tid, 0) == -ESRCH;
}

struct alloc_thread *alloc_thread_started(int tid)
{
	uintptr_t tp = rt_thread_pointer();
	uint32_t h = alloc_thread_hash(tp);
	for (uint32_t i = 0; tp != 0 && i < ALLOC_THREAD_PROBES; i++) {
		struct alloc_thread *t = &alloc_threads[(h + i) & (ALLOC_THREAD_SLOTS - 1u)];
		uintptr_t k = atomic_load(&t->key);
		if (k == tp) {
			atomic_store(&t->tid, tid);
			return t;
		}
		if (k == 0)
			return NULL;
	}
	return NULL;
}

struct alloc_thread *alloc_thread_claim(uintptr_t tp)
{
	if (tp == 0)
		return NULL;
	uint32_t h = alloc_thread_hash(tp);
	/* Keys only ever go from 0 to a thread pointer or from one thread
	 * pointer to another, so the first empty slot ends the search. */
	for (uint32_t i = 0; i < ALLOC_THREAD_PROBES; i++) {
		struct alloc_thread *t = &alloc_threads[(h + i) & (ALLOC_THREAD_SLOTS - 1u)];
		uintptr_t k = atomic_load(&t->key);
		if (k == tp)
			return t;
		if (k != 0)
			continue;
		if (atomic_compare_exchange_strong(&t->key, &k, tp)) {
			mark_claimed(t);
			thread_slot_init(t);
			return t;
		}
		if (k == tp)
			return t;
	}
	/* The probe window is full: take over a slot of an exited thread, but
	 * only now and then (each check is a system call). */
	if (atomic_fetch_add(&st.reclaim_tick, 1) % RECLAIM_EVERY == 0) {
		long pid = sys_getpid();
		for (uint32_t i = 0; i < ALLOC_THREAD_PROBES; i++) {
			struct alloc_thread *t = &alloc_threads[(h + i) & (ALLOC_THREAD_SLOTS - 1u)];
			uintptr_t k = atomic_load(&t->key);
			if (k != tp && thread_slot_dead(t, pid) &&
			    atomic_compare_exchange_strong(&t->key, &k, tp)) {
				thread_slot_init(t);
				return t;
			}
		}
	}
	if (atomic_fetch_add(&st.no_thread_slot, 1) == 0)
		rt_warn("allocation profiler: per-thread table full; some threads are not sampled");
	return NULL;
}

/* ---- stacks ---- */

/* The bounds of the stack sp is on, for the unwinder: cached in the slot
 * (a thread pointer keeps its stack mapping), else found in the module
 * snapshot (a stack as old as the last refresh, e.g. a forked child's, which
 * inherits it) or read once from /proc/self/maps.  Unknown bounds make the
 * unwinder read the stack through the kernel, which is safe but slow. */
static void stack_bounds(struct alloc_thread *t, uintptr_t sp, struct unwind_regs *regs)
{
	if (!(sp >= t->stack_lo && sp < t->stack_hi)) {
		uint64_t lo = 0, hi = 0;
		if (!unwind_stack_bounds(sp, &lo, &hi) && !symbols_stack_bounds_of(sp, &lo, &hi))
			return;
		t->stack_lo = (uintptr_t)lo;
		t->stack_hi = (uintptr_t)hi;
	}
	regs->stack_lo = t->stack_lo;
	regs->stack_hi = t->stack_hi;
}

/* The sampled allocation's stack, from the hook's caller on. */
static uint32_t capture_stack(struct alloc_thread *t, uintptr_t ra, uint64_t *buf, uint32_t cap,
			      uint32_t *depth)
{
	struct unwind_regs bounds;
	rt_memset(&bounds, 0, sizeof(bounds));
	stack_bounds(t, rt_stack_pointer(), &bounds);
	return sample_capture_caller(ra, bounds.stack_lo, bounds.stack_hi, buf, cap, depth);
}

/* ---- live table ---- */

/* Caller holds live_lock (writers of the bits hold it; only readers do not). */
static void filter_bit_set(_Atomic uint64_t *bits, uint32_t h)
{
	uint64_t m = 1ull << (h & 63u);
	/* Read first: the line stays shared with the cores reading it in free. */
	if (!(atomic_load_explicit(&bits[h >> 6], memory_order_relaxed) & m))
		atomic_fetch_or(&bits[h >> 6], m);
}

static void filter_bit_clear(_Atomic uint64_t *bits, uint32_t h)
{
	atomic_fetch_and(&bits[h >> 6], ~(1ull << (h & 63u)));
}

static uint32_t filter_small_bit(uint32_t h) { return h >> (ALLOC_FILTER_BITS - ALLOC_FILTER_SMALL_BITS); }

static void filter_add(uintptr_t addr)
{
	uint32_t h = alloc_addr_hash(addr), s = filter_small_bit(h);
	filter_bit_set(alloc_live_filter, h);
	if (st.filter_small_count[s]++ == 0)
		filter_bit_set(alloc_live_filter_small, s);
}

/* The big filter's bit and an entry's home slot are top bits of one hash,
 * so every entry sharing a bit shares a home and sits in the probe run from
 * it: after a deletion, that run says whether the bit is still needed (no
 * count array to miss in the cache on every sample and free). */
_Static_assert(ALLOC_LIVE_HOME_BITS <= ALLOC_FILTER_BITS, "the home must be a prefix of the filter hash");

/* Caller holds live_lock: whether an entry other than `addr`'s hashes to big-filter bit h. */
static bool live_run_has_hash(uintptr_t addr, uint32_t h)
{
	const uint32_t mask = st.nslots - 1u;
	uint32_t i = alloc_live_home(addr) & mask;
	for (uint32_t n = 0; n < st.nslots; n++, i = (i + 1u) & mask) {
		uintptr_t a = st.slots[i].addr;
		if (a == 0)
			return false;
		if (a != addr && alloc_addr_hash(a) == h)
			return true;
	}
	return false;
}

/* Caller holds live_lock; addr's entry has just been deleted. */
static void filter_remove(uintptr_t addr)
{
	uint32_t h = alloc_addr_hash(addr), s = filter_small_bit(h);
	if (!live_run_has_hash(addr, h))
		filter_bit_clear(alloc_live_filter, h);
	if (st.filter_small_count[s] != 0 && --st.filter_small_count[s] == 0)
		filter_bit_clear(alloc_live_filter_small, s);
}

/* Caller holds live_lock: drops every entry, clears both filters. */
static void live_forget_all(void)
{
	for (uint32_t i = 0; i < st.nslots && st.live; i++) {
		if (st.slots[i].addr) {
			rt_free(st.slots[i].pcs);
			rt_memset(&st.slots[i], 0, sizeof(st.slots[i]));
			st.live--;
		}
	}
	/* Only words that hold a bit are written: at the exit of a fork child
	 * the filters are mostly clear, and their pages stay shared. */
	for (uint32_t w = 0; w < RT_ARRAY_LEN(alloc_live_filter); w++)
		if (atomic_load_explicit(&alloc_live_filter[w], memory_order_relaxed))
			atomic_store_explicit(&alloc_live_filter[w], 0, memory_order_relaxed);
	for (uint32_t w = 0; w < RT_ARRAY_LEN(alloc_live_filter_small); w++)
		if (atomic_load_explicit(&alloc_live_filter_small[w], memory_order_relaxed))
			atomic_store_explicit(&alloc_live_filter_small[w], 0, memory_order_relaxed);
	for (uint32_t i = 0; i < RT_ARRAY_LEN(st.filter_small_count); i++)
		if (st.filter_small_count[i])
			st.filter_small_count[i] = 0;
}

/* Caller holds live_lock.  Index of addr's slot, or ALLOC_LIVE_SLOTS. */
static uint32_t live_find(uintptr_t addr)
{
	const uint32_t mask = st.nslots - 1u;
	uint32_t i = alloc_live_home(addr) & mask;
	for (uint32_t n = 0; n < st.nslots; n++) {
		uintptr_t a = st.slots[i].addr;
		if (a == addr)
			return i;
		if (a == 0)
			return ALLOC_LIVE_SLOTS;
		i = (i + 1) & mask;
	}
	return ALLOC_LIVE_SLOTS;
}

/* Caller holds live_lock: the first empty slot of addr's probe run. */
static uint32_t live_free_slot(uintptr_t addr)
{
	const uint32_t mask = st.nslots - 1u;
	uint32_t i = alloc_live_home(addr) & mask;
	for (uint32_t n = 0; n < st.nslots && st.slots[i].addr != 0; n++)
		i = (i + 1) & mask;
	return i;
}

/* Caller holds live_lock: a table twice the size, the entries moved over.
 * False (the table stays) when there is no memory for it. */
static bool live_grow(void)
{
	uint32_t old_n = st.nslots, new_n = old_n * 2u;
	struct alloc_live_entry *old = st.slots;
	struct alloc_live_entry *bigger = rt_pages_alloc(new_n * sizeof(*bigger));
	if (!bigger)
		return false;
	st.slots = bigger;
	st.nslots = new_n;
	for (uint32_t i = 0; i < old_n; i++)
		if (old[i].addr)
			st.slots[live_free_slot(old[i].addr)] = old[i];
	rt_pages_free(old, old_n * sizeof(*old));
	return true;
}

/* Caller holds live_lock: empties slot i, shifting later members of its
 * probe run back so every entry stays reachable from its home slot. */
static void live_delete_at(uint32_t i)
{
	const uint32_t mask = st.nslots - 1u;
	uint32_t hole = i;
	uint32_t j = i;
	for (uint32_t n = 0; n < st.nslots; n++) {
		j = (j + 1) & mask;
		if (st.slots[j].addr == 0)
			break;
		uint32_t home = alloc_live_home(st.slots[j].addr) & mask;
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		bool home_after_hole = ((j - home) & mask) < ((j - hole) & mask);
		if (!home_after_hole) {
			st.slots[hole] = st.slots[j];
			hole = j;
		}
	}
	rt_memset(&st.slots[hole], 0, sizeof(st.slots[hole]));
}

/* Inserts (or, for an address already present, replaces) an entry; takes
 * ownership of e->pcs.  False when the table is full. */
static bool live_insert(const struct alloc_live_entry *e)
{
	bool ok = false;
	struct alloc_live_entry old;
	old.pcs = NULL;
	rt_mutex_lock(&st.live_lock);
	uint32_t i = live_find(e->addr);
	if (i < ALLOC_LIVE_SLOTS) {
		/* A free we never saw (e.g. through a path we do not hook). */
		old = st.slots[i];
		st.slots[i] = *e;
		st.inserted_since_fork++;
		ok = true;
	} else if (st.live < ALLOC_LIVE_MAX &&
		   (st.live < st.nslots / 2u || (st.nslots < ALLOC_LIVE_SLOTS && live_grow()))) {
		st.slots[live_free_slot(e->addr)] = *e;
		st.live++;
		st.inserted_since_fork++;
		filter_add(e->addr);
		ok = true;
	}
	rt_mutex_unlock(&st.live_lock);
	rt_free(old.pcs);
	return ok;
}

bool alloc_live_retire(const void *p, struct alloc_live_entry *saved)
{
	uintptr_t addr = (uintptr_t)p;
	if (addr == 0 || !st.slots)
		return false;
	struct alloc_live_entry e;
	rt_mutex_lock(&st.live_lock);
	uint32_t i = live_find(addr);
	bool found = i < ALLOC_LIVE_SLOTS;
	if (found) {
		e = st.slots[i];
		live_delete_at(i);
		st.live--;
		filter_remove(addr);
	}
	rt_mutex_unlock(&st.live_lock);
	if (!found)
		return false;
	if (saved)
		*saved = e;
	else
		rt_free(e.pcs);
	return true;
}

void alloc_live_restore(struct alloc_live_entry *e)
{
	if (!live_insert(e)) {
		rt_free(e->pcs);
		atomic_fetch_add(&st.live_dropped, 1);
	}
	e->pcs = NULL;
}

void alloc_live_drop(struct alloc_live_entry *e)
{
	rt_free(e->pcs);
	e->pcs = NULL;
}

static void live_remember(uintptr_t addr, uint64_t size, double weight, int tid,
			  const uint64_t *pcs, uint32_t depth)
{
	struct alloc_live_entry e = { addr, size, weight, tid, depth, NULL };
	e.pcs = rt_malloc((size_t)depth * sizeof(uint64_t));
	if (!e.pcs) {
		atomic_fetch_add(&st.live_dropped, 1);
		return;
	}
	rt_memcpy(e.pcs, pcs, (size_t)depth * sizeof(uint64_t));
	if (!live_insert(&e)) {
		rt_free(e.pcs);
		if (atomic_fetch_add(&st.live_dropped, 1) == 0)
			rt_warn("allocation profiler: live-heap table full (%u entries); the heap "
				"profile undercounts", ALLOC_LIVE_MAX);
	}
}

/* ---- the sampled path ---- */

/* Starts loading the lines live_remember will write for addr (its home
 * slot, its filter words and count) while the stack is unwound: a sample
 * comes long after the last one, and these lines are cold by then.  Read
 * without the lock: a table replaced meanwhile only wastes the prefetch. */
static void live_prefetch(uintptr_t addr)
{
	const struct alloc_live_entry *slots = st.slots;
	uint32_t n = st.nslots;
	if (slots == NULL || n == 0)
		return;
	uint32_t h = alloc_addr_hash(addr);
	__builtin_prefetch(&slots[alloc_live_home(addr) & (n - 1u)], 1);
	__builtin_prefetch(&alloc_live_filter[h >> 6], 1);
	__builtin_prefetch(&st.filter_small_count[filter_small_bit(h)], 1);
}

static void sample_and_record(struct alloc_thread *t, void *p, size_t size, uintptr_t ra,
			      uint32_t skip);

void alloc_sample(struct alloc_thread *t, void *p, size_t size, uintptr_t ra)
{
	alloc_sample_skipping(t, p, size, ra, 0);
}

void alloc_sample_skipping(struct alloc_thread *t, void *p, size_t size, uintptr_t ra,
			   uint32_t skip)
{
	uint64_t n = atomic_load_explicit(&st.samples, memory_order_relaxed);
	if (n % ALLOC_COST_EVERY != 0) {
		sample_and_record(t, p, size, ra, skip);
		return;
	}
	/* The monotonic clock (the vDSO's: no system call whose entry and exit
	 * would cool the caches and make the sample look dearer than it is); a
	 * sample that long was preempted, and is not counted. */
	uint64_t start = rt_monotonic_ns();
	sample_and_record(t, p, size, ra, skip);
	uint64_t spent = rt_monotonic_ns() - start;
	if (spent > ALLOC_COST_PREEMPTED_NS)
		return;
	uint64_t clock = atomic_load_explicit(&st.clock_pair_ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&st.cost_ns, spent > clock ? spent - clock : 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&st.cost_samples, 1, memory_order_relaxed);
}

static void sample_and_record(struct alloc_thread *t, void *p, size_t size, uintptr_t ra,
			      uint32_t skip)
{
	/* The allocation that ran out the countdown is weighted by the mean that
	 * countdown was drawn with; the next one uses the mean in effect now. */
	uint64_t drawn_mean = t->countdown_mean ? t->countdown_mean : sample_rate();
	t->countdown_mean = sample_rate();
	t->countdown = alloc_draw_countdown(&t->rng, t->countdown_mean);
	struct recorder *rec = atomic_load(&st.rec);
	if (!p || !rec)
		return;
	double w = sample_weight(size, drawn_mean);
	int tid = atomic_load(&t->tid);
	atomic_fetch_add(&st.samples, 1);

	if (st.track_live)
		live_prefetch((uintptr_t)p);
	uint64_t buf[ALLOC_MAX_FRAMES + SAMPLE_OWN_FRAMES + ALLOC_MAX_SKIP];
	uint32_t depth = 0;
	skip = RT_MIN(skip, ALLOC_MAX_SKIP);
	uint32_t cap = RT_MIN(st.max_frames, ALLOC_MAX_FRAMES) + SAMPLE_OWN_FRAMES + skip;
	uint32_t first = capture_stack(t, ra, buf, cap, &depth);
	/* The frames left out are the allocator's own (a stack that ends in
	 * them keeps its last frame). */
	uint32_t left_out = depth > skip ? skip : 0;
	first += left_out;
	depth -= left_out;
	const uint64_t *pcs = buf + first;

	if (st.record_alloc) {
		struct sw_value values[2] = {
			{ SW_V_ALLOC_SAMPLES, sample_round_random(&t->rng, w) },
			{ SW_V_ALLOC_SPACE, sample_round_random(&t->rng, w * (double)size) },
		};
		/* The thread's span context, so allocations show up per request. */
		struct context_labels ctx;
		/* Only the labels in use are written: zeroing the whole array
		 * wrote ten cache lines of cold stack per sample. */
		struct sw_label labels[1 + CONTEXT_MAX_SAMPLE_LABELS];
		labels[0] = (struct sw_label){ SW_LABEL_THREAD_ID, NULL, tid, NULL };
		uint32_t n_labels = 1;
		if (context_read_self(&ctx.value)) {
			context_to_labels(&ctx);
			for (uint32_t k = 0; k < ctx.n; k++)
				labels[n_labels++] = ctx.labels[k];
		}
		struct sw_sample s = { pcs, depth, values, 2, labels, n_labels };
		if (recorder_add(rec, &s) != PROFILE_ADD_OK)
			atomic_fetch_add(&st.record_failed, 1);
	}
	if (st.track_live && st.slots)
		live_remember((uintptr_t)p, size, w, tid, pcs, depth);
}

/* ---- the collector ---- */

/* The cheapest of a few back-to-back clock reads: the measuring overhead
 * inside each timed sample (a system call where there is no vDSO). */
static uint64_t measure_clock_pair(void)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 16; i++) {
		uint64_t a = rt_monotonic_ns(), b = rt_monotonic_ns();
		if (b >= a && b - a < best)
			best = b - a;
	}
	return best == UINT64_MAX ? 0 : best;
}

/* Names the program binds to another allocator's definition, set at load
 * (alloc_note_foreign_binding), and the seconds counted towards looking
 * for an allocator the executable calls by its own names. */
static struct {
	const char *name[2];
	uintptr_t addr[2];
	uint32_t n;
	bool said;
	uint32_t own_allocator_seconds;
} foreign;

void alloc_note_foreign_binding(const char *name, const void *addr)
{
	if (foreign.n < 2) {
		foreign.name[foreign.n] = name;
		foreign.addr[foreign.n] = (uintptr_t)addr;
		foreign.n++;
	}
}

/* Says once that allocations made through a foreign definition are not
 * seen, and where that definition is. */
static void say_foreign_bindings(void)
{
	if (foreign.n == 0 || foreign.said)
		return;
	foreign.said = true;
	/* A non-PIE executable that takes a function's address has a canonical
	 * PLT entry for it, which lookups return so that the address is the
	 * same everywhere; it defines nothing, and calls through it reach the
	 * loader's binding of the executable's reference: ours. */
	uint32_t kept = 0;
	for (uint32_t i = 0; i < foreign.n; i++)
		if (symbols_module_defines(foreign.addr[i], foreign.name[i]) != 0) {
			foreign.name[kept] = foreign.name[i];
			foreign.addr[kept] = foreign.addr[i];
			kept++;
		}
	foreign.n = kept;
	if (kept == 0)
		return;
	char where[256];
	if (!symbols_module_path(foreign.addr[0], where, sizeof(where)))
		rt_strlcpy(where, "another object", sizeof(where));
	char exe[256];
	(void)rt_self_exe_path(exe, sizeof(exe));
	/* The executable's definitions come first; so do those of a library
	 * listed before ours in LD_PRELOAD. */
	const char *why = rt_streq(exe, where) ? "which the loader binds before LD_PRELOAD's"
					       : "loaded before libstowaway.so (list libstowaway.so first in LD_PRELOAD)";
	const char *first = foreign.name[0][0] == '_' ? "operator new" : foreign.name[0];
	if (foreign.n == 1)
		rt_warn("%s resolves to the definition in %s, %s: allocations made through it are "
			"not in the allocation and live-heap profiles", first, where, why);
	else
		rt_warn("malloc and operator new resolve to the definitions in %s, %s: allocations "
			"made through them are not in the allocation and live-heap profiles", where, why);
}

/* Allocators a program calls by their own names, never through malloc: a
 * Rust #[global_allocator] (tikv-jemallocator and jemallocator: jemalloc
 * prefixed _rjem_; mimalloc; snmalloc), jemalloc built with the je_ prefix
 * (Redis from source) or called by its extended API (mallocx), rpmalloc;
 * linked in or imported.  One name of each, with the allocator's name. */
static const char *const own_allocator_symbols[] = {
	"_rjem_mallocx", "_rjem_malloc",  "je_mallocx", "je_malloc", "mallocx",
	"mi_malloc_aligned", "mi_malloc", "sn_rust_alloc", "rpmalloc",
};
static const char *const own_allocator_names[] = {
	"jemalloc", "jemalloc", "jemalloc", "jemalloc", "jemalloc",
	"mimalloc", "mimalloc", "snmalloc", "rpmalloc",
};
_Static_assert(RT_ARRAY_LEN(own_allocator_symbols) == RT_ARRAY_LEN(own_allocator_names),
	       "one allocator name per symbol");

/* Seconds of profiling before the executable's string table is read for
 * an allocator of its own: a process gone before then never pays for it. */
#define OWN_ALLOCATOR_CHECK_SECONDS 2u

/* Says once, a few seconds in, that the executable calls an allocator of
 * its own, unless the loader's binding of malloc was reported already. */
static void say_own_allocator(void)
{
	if (foreign.own_allocator_seconds >= OWN_ALLOCATOR_CHECK_SECONDS || !atomic_load(&alloc_hot.sampling))
		return;
	if (++foreign.own_allocator_seconds < OWN_ALLOCATOR_CHECK_SECONDS || foreign.n > 0)
		return;
	uint64_t entry = host_entry_pc();
	int i = entry != 0 ? symbols_module_names_any(entry, own_allocator_symbols,
						      RT_ARRAY_LEN(own_allocator_symbols))
			   : -1;
	if (i < 0)
		return;
	char exe[256];
	if (!rt_self_exe_path(exe, sizeof(exe)))
		rt_strlcpy(exe, "the executable", sizeof(exe));
	rt_warn("%s calls %s directly (its symbols name %s), not through malloc: the allocations it "
		"makes with it are not in the allocation and live-heap profiles",
		exe, own_allocator_names[i], own_allocator_symbols[i]);
}

int alloc_collector_start(const struct sw_config *cfg, struct recorder *rec)
{
	bool want_alloc = (cfg->kinds & SW_KIND_BIT(SW_KIND_ALLOC)) != 0;
	bool want_live = (cfg->kinds & SW_KIND_BIT(SW_KIND_HEAP)) != 0;
	if (!want_alloc && !want_live)
		return -EINVAL;
	if (want_live && !st.slots) {
		st.slots = rt_pages_alloc(ALLOC_LIVE_MIN_SLOTS * sizeof(struct alloc_live_entry));
		if (!st.slots)
			return -ENOMEM;
		st.nslots = ALLOC_LIVE_MIN_SLOTS;
	}
	if (atomic_load(&st.seed) == 0) {
		uint64_t seed = 0;
		if (!rt_random_bytes(&seed, sizeof(seed)))
			seed = rt_monotonic_ns() ^ ((uint64_t)sys_getpid() << 32);
		atomic_store(&st.seed, seed | 1);
		rt_rng_seed(&st.export_rng);
	}
	/* Entries left from a previous run may have been freed unseen. */
	if (st.slots && !(atomic_load(&alloc_hot.free_checks) & ALLOC_FREE_RETIRE)) {
		rt_mutex_lock(&st.live_lock);
		live_forget_all();
		rt_mutex_unlock(&st.live_lock);
	}
	atomic_store(&st.rate, cfg->alloc_sample_bytes ? cfg->alloc_sample_bytes : ALLOC_DEFAULT_RATE);
	atomic_store(&st.clock_pair_ns, measure_clock_pair());
	st.max_frames = cfg->max_frames ? cfg->max_frames : 64u;
	st.record_alloc = want_alloc;
	st.track_live = want_live;
	atomic_store(&st.rec, rec);
	if (want_live)
		atomic_fetch_or(&alloc_hot.free_checks, ALLOC_FREE_RETIRE);
	else
		atomic_fetch_and(&alloc_hot.free_checks, ~ALLOC_FREE_RETIRE);
	atomic_store(&alloc_hot.sampling, 1);
	say_foreign_bindings();
	rt_info("allocation profiler on: one sample per %llu bytes on average%s%s",
		(unsigned long long)sample_rate(), want_alloc ? ", allocations" : "",
		want_live ? ", live heap" : "");
	return 0;
}

void alloc_collector_stop(void) { atomic_store(&alloc_hot.sampling, 0); }

/* One live entry copied out of the table for the snapshot. */
struct live_copy {
	uint64_t size;
	double weight;
	int tid;
	uint32_t depth;
};

void alloc_collector_before_export(struct profile *finished)
{
	if (!st.slots || !st.track_live)
		return;
	/* Copy under the lock, add to the profile outside it: hooks on other
	 * threads wait only for the copy. */
	struct rt_buf copy = { 0 };
	rt_mutex_lock(&st.live_lock);
	for (uint32_t i = 0, seen = 0; i < st.nslots && seen < st.live; i++) {
		const struct alloc_live_entry *e = &st.slots[i];
		if (!e->addr)
			continue;
		seen++;
		struct live_copy c = { e->size, e->weight, e->tid, e->depth };
		rt_buf_append(&copy, &c, sizeof(c));
		rt_buf_append(&copy, e->pcs, (size_t)e->depth * sizeof(uint64_t));
	}
	bool stopped = !atomic_load(&alloc_hot.sampling);
	if (stopped) {
		/* Nothing is sampled any more: forget the table, stop retiring. */
		atomic_fetch_and(&alloc_hot.free_checks, ~ALLOC_FREE_RETIRE);
		live_forget_all();
	}
	rt_mutex_unlock(&st.live_lock);
	if (copy.failed) {
		rt_log_once(RT_LOG_WARN, "allocation profiler: out of memory for the live-heap "
					 "snapshot; this period has none");
		rt_buf_free(&copy);
		return;
	}
	size_t off = 0;
	for (size_t n = 0; n < LIVE_SCAN_CAP && off + sizeof(struct live_copy) <= copy.len; n++) {
		struct live_copy c;
		rt_memcpy(&c, copy.data + off, sizeof(c));
		off += sizeof(c);
		size_t bytes = (size_t)c.depth * sizeof(uint64_t);
		if (off + bytes > copy.len)
			break;
		uint64_t pcs[ALLOC_MAX_FRAMES];
		uint32_t depth = RT_MIN(c.depth, ALLOC_MAX_FRAMES);
		rt_memcpy(pcs, copy.data + off, (size_t)depth * sizeof(uint64_t));
		off += bytes;
		struct sw_value values[2] = {
			{ SW_V_HEAP_LIVE_SAMPLES, sample_round_random(&st.export_rng, c.weight) },
			{ SW_V_HEAP_LIVE_SIZE,
			  sample_round_random(&st.export_rng, c.weight * (double)c.size) },
		};
		struct sw_label label = { SW_LABEL_THREAD_ID, NULL, c.tid, NULL };
		struct sw_sample s = { pcs, depth, values, 2, &label, 1 };
		(void)profile_add(finished, &s);
	}
	rt_buf_free(&copy);
}

void alloc_collector_after_fork_child(void)
{
	rt_mutex_reset(&st.live_lock);
	st.inserted_since_fork = 0;
	/* Slots draw their generator from st.seed: children forked from one
	 * parent state would otherwise all sample the same allocations. */
	struct rt_rng rng;
	rt_rng_seed(&rng);
	atomic_store(&st.seed, rt_rng_next(&rng));
	/* Only the forking thread survives; it claims a fresh slot. */
	for (uint32_t w = 0; w < ALLOC_THREAD_SLOTS / 64u; w++) {
		uint64_t bits = atomic_load_explicit(&claimed_bits[w], memory_order_relaxed);
		if (!bits)
			continue;
		for (; bits; bits &= bits - 1) {
			uint32_t i = w * 64u + (uint32_t)__builtin_ctzll(bits);
			if (atomic_load_explicit(&alloc_threads[i].key, memory_order_relaxed))
				atomic_store(&alloc_threads[i].key, 0);
		}
		atomic_store(&claimed_bits[w], 0);
	}
	/* Operator deletes of vanished threads learn no more: free stops noting. */
	if (atomic_load_explicit(&alloc_hot.free_checks, memory_order_relaxed) >= ALLOC_FREE_LEARNING)
		(void)atomic_fetch_and(&alloc_hot.free_checks, ALLOC_FREE_LEARNING - 1);
}

bool alloc_live_inherited_only(void)
{
	if (!st.slots || !st.track_live)
		return false;
	rt_mutex_lock(&st.live_lock);
	bool inherited = st.inserted_since_fork == 0;
	rt_mutex_unlock(&st.live_lock);
	return inherited;
}

void alloc_get_stats(struct alloc_stats *out)
{
	rt_mutex_lock(&st.live_lock);
	out->live = st.live;
	rt_mutex_unlock(&st.live_lock);
	out->samples = atomic_load(&st.samples);
	out->live_dropped = atomic_load(&st.live_dropped);
	out->no_thread_slot = atomic_load(&st.no_thread_slot);
	out->record_failed = atomic_load(&st.record_failed);
}

void alloc_set_sample_bytes(uint64_t mean)
{
	if (mean)
		atomic_store_explicit(&st.rate, mean, memory_order_release);
}

uint64_t alloc_sample_bytes(void) { return sample_rate(); }

void alloc_sample_cost(uint64_t *measured_ns, uint64_t *measured_samples)
{
	*measured_ns = atomic_load_explicit(&st.cost_ns, memory_order_relaxed);
	*measured_samples = atomic_load_explicit(&st.cost_samples, memory_order_relaxed);
}

uint64_t alloc_samples_taken(void) { return atomic_load_explicit(&st.samples, memory_order_relaxed); }

static int64_t alloc_period(const struct sw_config *cfg, enum sw_kind kind)
{
	RT_UNUSED(kind);
	return (int64_t)cfg->alloc_sample_bytes;
}

const struct collector alloc_collector = {
	.name = "alloc",
	.kinds = SW_KIND_BIT(SW_KIND_ALLOC) | SW_KIND_BIT(SW_KIND_HEAP),
	.start = alloc_collector_start,
	.stop = alloc_collector_stop,
	.after_fork_child = alloc_collector_after_fork_child,
	.each_second = say_own_allocator,
	.flush = alloc_collector_before_export,
	.period = alloc_period,
};
