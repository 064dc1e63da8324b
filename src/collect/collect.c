/* The collector group and the sampler thread.
 *
 * The sampler thread serves two clocks: the wall sampler's ticks
 * (wall_serve, at the wall rate, slower while every thread waits), and its
 * own tick every 10 to 100 ms: each collector's tick (the CPU ring drained
 * into the recorder, the lock profiler's epoch advanced).  One thread wakes
 * for both, so a process pays one wake-up where two clocks meet.
 * Its wake-ups follow the samples: a tick that drained few CPU samples
 * makes the next one longer, up to 100 ms, so a program with one busy
 * thread (100 samples a second) wakes it 10 times a second, not 100; the
 * lock profiler, whose epoch is a 10 ms tick, keeps it at 10 ms.  Ticks
 * that drained none grow on up to 1 s, as long as the threads there are
 * cannot fill half the ring meanwhile (a process whose threads all wait:
 * one wake-up a second); a new thread brings the tick back to 10 ms.  About once
 * a second it reconciles the thread registry with /proc/self/task, runs
 * each collector's once-a-second work (the CPU handler still ours?) and the
 * overhead cap; every 3 s it refreshes the module registry, if a CPU or
 * allocation sample was taken since the last refresh. */
#include "collect/collect.h"
#include "collect/alloc.h"
#include "collect/collector.h"
#include "collect/otel_context.h"
#include "collect/cpu.h"
#include "collect/lock.h"
#include "collect/overhead.h"
#include "collect/sample.h"
#include "collect/threads.h"
#include "collect/wall.h"
#include "profile/family.h"
#include "rt/thread.h"
#include "rt/sys.h"
#include "symbols/symbols.h"
#include "unwind/unwind.h"

/* The sampler's tick: at least the lock profiler's 10 ms epoch, at most
 * 100 ms, stretched so that about TICK_SAMPLES CPU samples wait in the ring
 * (of its 512) between two drains at the rate of the last tick. */
#define SAMPLER_TICK_MIN_NS (10 * 1000000ull)
#define SAMPLER_TICK_MAX_NS (100 * 1000000ull)
/* The longest tick after ticks without a CPU sample: the once-a-second work
 * (thread scan, handler check, overhead cap) sets the pace then. */
#define SAMPLER_TICK_IDLE_MAX_NS RT_NS_PER_SEC
#define TICK_SAMPLES 64u
#define SCAN_EVERY_NS RT_NS_PER_SEC
#define REFRESH_EVERY_NS (3 * RT_NS_PER_SEC)
/* The periodic refresh is a safety net (dlopen, unknown code and unknown
 * stacks ask for one at once): each that finds the code mapped unchanged
 * doubles the interval up to this, a change of code brings it back to
 * REFRESH_EVERY_NS.  Memory mapped and unmapped by the host's allocator
 * does not: a server's heap changes between any two reads.  Reading the
 * maps takes about a millisecond for a postgres backend's 300 lines. */
#define REFRESH_MAX_NS (48 * RT_NS_PER_SEC)
/* How often the file pages unwinds read are counted, and given back when
 * they may hold more than UNWIND_PAGES_KEEP; exports give them all back
 * first, so they are never part of an export's peak. */
#define TRIM_EVERY_NS (100 * 1000000ull)
#define UNWIND_PAGES_KEEP ((uint64_t)4 << 20)
/* Refreshes asked for by unknown code: at most one per 100 ms (a broken frame
 * chain can yield garbage pcs on every sample; an unchanged maps file costs
 * one read and a hash). */
#define UNKNOWN_REFRESH_MIN_NS (100 * 1000000ull)

/* In the order they start (those that need threads after the first scan),
 * stop, flush and forget the parent after a fork. */
static const struct collector *const collectors[] = {
	&cpu_collector, &wall_collector, &alloc_collector, &lock_collector, &exception_collector,
};
#define N_COLLECTORS RT_ARRAY_LEN(collectors)

static struct {
	atomic_int running;
	atomic_int sampler_alive;
	/* Threads registered now (the registry's hooks count them). */
	atomic_int threads;
	/* Raised by a thread's registration: the sampler's tick goes back to
	 * its shortest; with sleeping_long, the sampler is woken for it. */
	atomic_int thread_came;
	atomic_int sleeping_long;
	/* Orders a fork child's deferred thread start with collect_stop. */
	struct rt_mutex start_lock;
	const struct sw_config *cfg;
	struct recorder *rec; /* where the children's handed samples go */
} col;

static void thread_added(int slot, int tid, bool self)
{
	if (cpu_running())
		cpu_thread_added(slot, tid, self);
	wall_thread_added(slot, tid, self);
	atomic_fetch_add(&col.threads, 1);
	atomic_store(&col.thread_came, 1);
	/* A sampler asleep for longer than a busy tick would let a burst of
	 * new busy threads fill the ring first. */
	if (atomic_load(&col.sleeping_long) && atomic_exchange(&col.sleeping_long, 0))
		thread_own_interrupt();
}

static void thread_removed(int slot, int tid)
{
	cpu_thread_removed(slot, tid);
	wall_thread_removed(slot, tid);
	atomic_fetch_sub(&col.threads, 1);
}

static const struct thread_hooks registry_hooks = { thread_added, thread_removed };

/* The length of the next tick after one of tick_ns in which the CPU
 * handlers took `samples`. */
uint64_t collect_next_tick_ns(uint64_t tick_ns, uint64_t samples, bool lock_epochs,
			      uint64_t idle_max_ns)
{
	if (lock_epochs)
		return SAMPLER_TICK_MIN_NS;
	uint64_t next = samples == 0 ? 2 * tick_ns : tick_ns / samples * TICK_SAMPLES;
	/* Longer by at most twice at a time: a burst of new threads is met
	 * within a few short ticks. */
	next = RT_MIN(next, 2 * tick_ns);
	uint64_t most = SAMPLER_TICK_MAX_NS;
	if (samples == 0)
		most = RT_MAX(most, RT_MIN(idle_max_ns, SAMPLER_TICK_IDLE_MAX_NS));
	return RT_MAX(RT_MIN(next, most), SAMPLER_TICK_MIN_NS);
}

static void *sampler_main(void *arg)
{
	RT_UNUSED(arg);
	(void)sys_prctl(15 /* PR_SET_NAME */, (long)"stowaway-sample", 0, 0, 0);
	uint64_t now = rt_monotonic_ns(), tick_ns = SAMPLER_TICK_MIN_NS;
	uint64_t next_trim = now + TRIM_EVERY_NS, next_scan = now + SCAN_EVERY_NS;
	uint64_t next_refresh = now + REFRESH_EVERY_NS, last_unknown_refresh = now;
	uint64_t refresh_every = REFRESH_EVERY_NS, code_changes = symbols_code_changes();
	uint64_t samples_seen = cpu_samples_taken() + cpu_samples_dropped();
	uint64_t stacks_at_refresh = samples_seen + alloc_samples_taken();
	/* The thread's CPU clock as it last went to sleep: a wake-up for a
	 * wall tick is the wall's cost (wall_serve). */
	uint64_t cpu_mark = rt_thread_cpu_ns();
	while (atomic_load(&col.running)) {
		/* Our tick goes with a wall tick within half a tick of it: one
		 * wake-up for both. */
		uint64_t wall_due = wall_next_tick_ns(), own_due = now + tick_ns;
		uint64_t slack = tick_ns / 2;
		if (wall_due >= own_due && wall_due - own_due <= slack)
			own_due = wall_due;
		uint64_t due = RT_MIN(own_due, wall_due);
		atomic_store(&col.sleeping_long, due > now + SAMPLER_TICK_MAX_NS);
		if (atomic_exchange(&col.thread_came, 0) && tick_ns > SAMPLER_TICK_MIN_NS) {
			tick_ns = SAMPLER_TICK_MIN_NS;
			continue;
		}
		thread_own_sleep_until(due);
		atomic_store(&col.sleeping_long, 0);
		uint64_t woke = rt_monotonic_ns();
		if (woke < due)
			continue; /* woken for a stop or a new thread: the loop says */
		if (woke >= wall_due)
			cpu_mark = wall_serve(cpu_mark);
		/* At wall ticks too: our own ticks grow long without CPU samples,
		 * while wall visits keep filling unwind pages. */
		if (woke >= next_trim) {
			next_trim = woke + TRIM_EVERY_NS;
			symbols_trim(UNWIND_PAGES_KEEP);
		}
		if (woke + slack < own_due)
			continue;
		for (size_t i = 0; i < N_COLLECTORS; i++)
			if (collectors[i]->tick)
				collectors[i]->tick();
		now = rt_monotonic_ns();
		uint64_t samples = cpu_samples_taken() + cpu_samples_dropped();
		/* Long ticks only while the threads there are cannot fill half
		 * the ring in one. */
		uint32_t threads = (uint32_t)RT_MAX(atomic_load(&col.threads), 1);
		tick_ns = collect_next_tick_ns(tick_ns, samples - samples_seen, lock_epoch() != 0,
					       cpu_ring_half_fill_ns(threads));
		samples_seen = samples;
		if (now >= next_scan) {
			next_scan = now + SCAN_EVERY_NS;
			(void)threads_scan();
			for (size_t i = 0; i < N_COLLECTORS; i++)
				if (collectors[i]->each_second)
					collectors[i]->each_second();
			overhead_tick(col.cfg);
			otel_context_find_key_map_if_wanted();
		}
		/* New thread stacks and code mapped without dlopen; sooner when a
		 * sample met code outside every known mapping.  Not while no CPU
		 * or allocation sample was taken since the last refresh (a process
		 * that waits: nothing new to name; an export refreshes anyway). */
		uint64_t stacks = samples + alloc_samples_taken();
		if ((now >= next_refresh && stacks != stacks_at_refresh) ||
		    (now - last_unknown_refresh >= UNKNOWN_REFRESH_MIN_NS && unwind_take_unknown_code())) {
			last_unknown_refresh = now;
			stacks_at_refresh = stacks;
			(void)symbols_refresh();
			uint64_t changes = symbols_code_changes();
			refresh_every = changes == code_changes ? RT_MIN(refresh_every * 2u, REFRESH_MAX_NS)
								: REFRESH_EVERY_NS;
			code_changes = changes;
			next_refresh = now + refresh_every;
		} else if (now >= next_refresh) {
			next_refresh = now + refresh_every;
		}
		/* Samples the children handed over at their exit (family.h): a
		 * process forking one per connection keeps ticking at least ten
		 * times a second, so its inbox does not fill. */
		if (family_drain(col.rec) > 0 && tick_ns > SAMPLER_TICK_MAX_NS)
			tick_ns = SAMPLER_TICK_MAX_NS;
		if (wall_running())
			cpu_mark = rt_thread_cpu_ns();
	}
	cpu_drain();
	wall_served(false);
	thread_flag_clear(&col.sampler_alive);
	return NULL;
}

/* Starts the sampler thread, its alive flag raised first (a stop waits on
 * it) and the wall ticks handed to it; both are taken back if the thread
 * could not be made. */
static int spawn_sampler(void)
{
	atomic_store(&col.sampler_alive, 1);
	wall_served(true);
	int r = thread_spawn(sampler_main, NULL);
	if (r < 0) {
		wall_served(false);
		atomic_store(&col.sampler_alive, 0);
	}
	return r;
}

int collect_start(const struct sw_config *cfg, struct recorder *rec)
{
	if (atomic_exchange(&col.running, 1))
		return 0;
	col.cfg = cfg;
	col.rec = rec;
	overhead_spent_from_here();
	int n = 0;
	threads_set_hooks(&registry_hooks);
	/* Before any sampler runs: where tracers publish each thread's span. */
	otel_context_refresh();
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			int live = threads_scan();
			if (live < 0) {
				rt_warn("cannot read /proc/self/task (error %d): only this thread and "
					"threads started from now on are profiled", -live);
				(void)threads_register((int)sys_gettid(), false, 0, 0);
			}
		}
		for (size_t i = 0; i < N_COLLECTORS; i++) {
			const struct collector *c = collectors[i];
			if (c->needs_threads == (pass == 1) && (cfg->kinds & c->kinds) &&
			    c->start(cfg, rec) == 0)
				n++;
		}
	}
	int tid = (int)sys_gettid();
	wall_clocks_begin_here(threads_find(tid), tid);
	/* No thread yet: collect_start_threads, if the process lives on. */
	return n;
}

void collect_stop(void)
{
	rt_mutex_lock(&col.start_lock);
	bool was_running = atomic_exchange(&col.running, 0) != 0;
	rt_mutex_unlock(&col.start_lock);
	if (!was_running)
		return;
	thread_own_interrupt();
	for (size_t i = 0; i < N_COLLECTORS; i++)
		if (collectors[i]->stop)
			collectors[i]->stop();
	/* Let the sampler drain what the handlers left (bounded wait). */
	(void)thread_flag_wait_clear(&col.sampler_alive, 100 * 1000000ull);
	cpu_drain();
}

bool collect_threads_active(void) { return atomic_load(&col.running) != 0; }

void collect_before_export(struct profile *finished)
{
	symbols_trim(0);
	for (size_t i = 0; i < N_COLLECTORS; i++)
		if (collectors[i]->flush)
			collectors[i]->flush(finished);
}

bool collect_endpoint_counts_pending(void) { return context_endpoint_counts_pending(); }

uint64_t collect_endpoint_counts_take(void (*fn)(void *ctx, const char *name, uint64_t count),
				      void *ctx)
{
	return context_endpoint_counts_take(fn, ctx);
}

int64_t collect_period(const struct sw_config *cfg, enum sw_kind kind)
{
	for (size_t i = 0; i < N_COLLECTORS; i++)
		if ((collectors[i]->kinds & SW_KIND_BIT(kind)) && collectors[i]->period)
			return collectors[i]->period(cfg, kind);
	return 1;
}

size_t collect_describe(char *buf, size_t cap) { return overhead_describe(buf, cap); }

void collect_after_fork_child(void)
{
	/* Only the forking thread exists in the child: none of ours, none of
	 * the parent's other threads, and no timer (timers are not inherited). */
	thread_forget_own();
	/* The forking thread's stack is the one it had in the parent, same
	 * addresses: its bounds come from the parent's registry when known
	 * there, else from the inherited module snapshot (bounds 0), never from
	 * a read of /proc/self/maps in every child. */
	uint64_t here = (uint64_t)(uintptr_t)&here, lo = 0, hi = 0;
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1)) {
		const struct thread_slot *t = &thread_slots[s];
		if (atomic_load(&t->tid) && t->stack_lo && t->stack_lo <= here && here < t->stack_hi) {
			lo = t->stack_lo;
			hi = t->stack_hi;
			break;
		}
	}
	if (lo == 0 && !unwind_stack_bounds(here, &lo, &hi))
		lo = hi = 0;
	threads_reset();
	rt_mutex_reset(&col.start_lock);
	atomic_store(&col.sampler_alive, 0);
	atomic_store(&col.threads, 0);
	atomic_store(&col.sleeping_long, 0);
	for (size_t i = 0; i < N_COLLECTORS; i++)
		if (collectors[i]->after_fork_child)
			collectors[i]->after_fork_child();
	context_after_fork_child();
	overhead_spent_from_here();
	if (!atomic_load(&col.running))
		return;
	int tid = (int)sys_gettid();
	wall_clocks_begin_here(threads_register(tid, true, lo, hi), tid);
	/* No thread yet: collect_start_threads, if the child lives on. */
}

void collect_start_threads(void)
{
	rt_mutex_lock(&col.start_lock);
	if (atomic_load(&col.running)) {
		if (!atomic_load(&col.sampler_alive)) {
			int r = spawn_sampler();
			if (r < 0)
				rt_warn("cannot start the sampler thread (error %d): samples wait in "
					"their rings, up to their bound, for the exit's export", -r);
		}
	}
	rt_mutex_unlock(&col.start_lock);
}

__attribute__((noinline)) uint32_t collect_stack_of_caller(uint64_t *pcs, uint32_t cap)
{
	uint32_t depth = sample_caller_stack((uintptr_t)__builtin_return_address(0), 0, 0, pcs, cap);
	return depth ? sample_drop_own_leaves(pcs, depth) : 0;
}

bool collect_take_unknown_code(void) { return unwind_take_unknown_code(); }

bool collect_heap_only_inherited(void) { return alloc_live_inherited_only(); }
