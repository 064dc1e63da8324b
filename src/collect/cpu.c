/* CPU-time sampling.
 *
 * Each registered thread gets a timer on its own CPU clock (SIGEV_THREAD_ID
 * to that thread), first expiry random within the period.  Each expiry
 * stands for one period of the thread's CPU time, those merged into one
 * signal (si_overrun: the kernel checks CPU timers at its ticks, which may
 * be coarser than the period) included.  With the first expiry uniform in
 * the first period, the expected count of a thread that used c of CPU is
 * c / period exactly, a thread shorter than a period included, so the
 * profile's total is an unbiased estimate of the CPU the threads used.
 * (Weighting a sample by the CPU time since the previous one, as this did
 * before, loses the time after each thread's last sample: half a period
 * per thread on average, nearly all of a thread that runs less than one.)
 * Expiries the kernel had not delivered when a thread ends (its CPU time
 * passed them after the last signal it was sent; late under load) are
 * counted from the thread's CPU time and the expiries delivered since the
 * timer was armed, and taken as one sample at the synthetic frame
 * "[unsampled]" as the thread's routine returns (under the routine) and
 * for the thread that stops profiling (alone: at exit, the thread that
 * ends the process).
 *
 * The handler touches only our preallocated ring and the thread's stack, and
 * never libc: errno is untouched because we make raw system calls only. */
#include "collect/cpu.h"
#include "collect/collector.h"
#include "collect/context.h"
#include "collect/ring.h"
#include "collect/sample.h"
#include "collect/threads.h"
#include "collect/wall.h"
#include "rt/sys.h"


#define RING_RECORDS 512u
#define SIGNAL_PROBE_TRIES 4
/* One sample in COST_SAMPLE_EVERY reads the thread clock on the way in and
 * out, so the overhead cap knows what a sample costs (two system calls per
 * COST_SAMPLE_EVERY samples; the others read no clock). */
#define COST_SAMPLE_EVERY 8u
#define DELIVERY_ROUNDS 32

/* One sample as the handler leaves it; pcs has cfg->max_frames + 1 slots. */
struct cpu_record {
	struct ring_head head;
	int tid;
	int slot;
	uint32_t depth;
	bool has_context;
	uint64_t cpu_ns;
	struct context_value context; /* the thread's span context when sampled */
	uint64_t pcs[];
};


static struct {
	atomic_int running;
	int signo;
	const struct sw_config *cfg;
	struct recorder *rec;
	struct sample_ring ring;
	uint32_t max_frames;
	atomic_ullong period_ns; /* changed by cpu_set_rate */
	atomic_ullong dropped;
	atomic_ullong taken;
	atomic_ullong signals;      /* handled, to measure one in COST_SAMPLE_EVERY */
	atomic_ullong cost_ns;      /* handler CPU time of the measured samples */
	atomic_ullong cost_samples; /* samples measured */
	atomic_ullong drain_ns;     /* CPU time spent moving samples into the recorder */
	struct sys_sigaction previous;
	struct rt_rng rng; /* sampler/registering threads only, under rng_lock */
	struct rt_mutex rng_lock;
} cpu;

static void cpu_signal_handler(int sig, void *siv, void *ucv)
{
	RT_UNUSED(sig);
	const struct sys_timer_siginfo *si = siv;
	if (!atomic_load_explicit(&cpu.running, memory_order_acquire) || si->code != SYS_SI_TIMER)
		return;
	uint64_t slot = si->value;
	if (slot >= THREADS_MAX)
		return;
	struct thread_slot *t = &thread_slots[slot];
	int tid = (int)sys_gettid();
	if (atomic_load_explicit(&t->tid, memory_order_relaxed) != tid)
		return; /* a late signal for a slot that was reused */
	bool measure = atomic_fetch_add_explicit(&cpu.signals, 1, memory_order_relaxed) %
			       COST_SAMPLE_EVERY == 0;
	uint64_t now = measure ? rt_thread_cpu_ns() : 0;
	uint64_t periods = 1u + (si->overrun > 0 ? (uint64_t)si->overrun : 0u);
	uint64_t weight = periods * atomic_load_explicit(&cpu.period_ns, memory_order_relaxed) +
			  t->cpu_carried_ns;
	t->cpu_carried_ns = 0;
	atomic_fetch_add_explicit(&t->cpu_expiries, periods, memory_order_relaxed);

	struct cpu_record *rec = ring_reserve(&cpu.ring);
	if (!rec) {
		/* The time is not lost: the next sample of this thread carries it. */
		t->cpu_carried_ns = weight;
		atomic_fetch_add(&cpu.dropped, 1);
		wall_running_sample(slot, ucv, 0, NULL, 0, NULL);
		return;
	}
	rec->depth = sample_unwind_interrupted(ucv, t->stack_lo, t->stack_hi, rec->pcs, cpu.max_frames);
	/* Interrupted in our own code (an interposer's work on the host's
	 * thread): the time is the host caller's, shown at its frame. */
	rec->depth = sample_drop_own_leaves(rec->pcs, rec->depth);
	rec->has_context = context_read_self(&rec->context);
	rec->tid = tid;
	rec->slot = (int)slot;
	rec->cpu_ns = weight;
	atomic_fetch_add(&cpu.taken, 1);
	/* The wall time owed to the thread's running samples goes with this
	 * stack: one signal and one unwind for both profiles. */
	wall_running_sample(slot, ucv, weight, rec->pcs, rec->depth, rec->has_context ? &rec->context : NULL);
	ring_publish(&cpu.ring, rec);
	if (measure) {
		uint64_t out = rt_thread_cpu_ns();
		atomic_fetch_add_explicit(&cpu.cost_ns, out > now ? out - now : 0, memory_order_relaxed);
		atomic_fetch_add_explicit(&cpu.cost_samples, 1, memory_order_relaxed);
	}
}

/* The current period as a timer setting, first expiry random within it;
 * returns the first expiry. */
static uint64_t timer_spec(struct sys_itimerspec *its)
{
	uint64_t period = atomic_load(&cpu.period_ns);
	rt_mutex_lock(&cpu.rng_lock);
	uint64_t first = 1 + rt_rng_next(&cpu.rng) % period;
	rt_mutex_unlock(&cpu.rng_lock);
	its->interval = sys_timespec_of_ns(period);
	its->value = sys_timespec_of_ns(first);
	return first;
}

/* Arms the thread's timer (CPU clock clk) as its; `first` is its first
 * expiry.  The expiries are counted from here (cpu_thread_ending). */
static long arm(struct thread_slot *t, int timer, int clk, const struct sys_itimerspec *its, uint64_t first)
{
	atomic_store(&t->cpu_expiries, 0);
	atomic_store(&t->cpu_first_expiry_ns, rt_clock_ns(clk) + first);
	return sys_timer_settime(timer, 0, its, NULL);
}

void cpu_thread_added(int slot, int tid, bool self)
{
	if (!atomic_load(&cpu.running))
		return;
	struct thread_slot *t = &thread_slots[slot];
	if (t->no_signals)
		return;
	int clk = self ? CLOCK_THREAD_CPUTIME_ID : sys_thread_cpu_clock(tid);
	t->cpu_carried_ns = 0;
	struct sys_itimerspec its;
	uint64_t first = timer_spec(&its);
	struct sys_sigevent sev;
	rt_memset(&sev, 0, sizeof(sev));
	sev.value = (uint64_t)slot;
	sev.signo = cpu.signo;
	sev.notify = SIGEV_THREAD_ID;
	sev.tid = tid;
	int timer = -1;
	long r = sys_timer_create(clk, &sev, &timer);
	if (r < 0) {
		if (r != -EINVAL && r != -ESRCH) /* the thread already exited */
			rt_log_once(RT_LOG_WARN, "cannot create CPU timers (error %ld); some threads "
						 "are not CPU-profiled", -r);
		return;
	}
	int old = atomic_exchange(&t->timer_id, timer);
	if (old >= 0)
		(void)sys_timer_delete(old);
	r = arm(t, timer, clk, &its, first);
	if (r < 0) {
		if (r != -EINVAL && r != -ESRCH)
			rt_log_once(RT_LOG_WARN, "cannot arm CPU timers (error %ld); some threads are "
						 "not CPU-profiled", -r);
		atomic_store(&t->timer_id, -1);
		(void)sys_timer_delete(timer);
	}
}

void cpu_thread_removed(int slot, int tid)
{
	RT_UNUSED(tid);
	int timer = atomic_exchange(&thread_slots[slot].timer_id, -1);
	if (timer >= 0)
		(void)sys_timer_delete(timer);
}

/* The CPU time of expiries not delivered, as one sample at "[unsampled]"
 * under entry_pc. */
static void take_missed(int slot, struct thread_slot *t, uint64_t cpu_ns, uint64_t entry_pc, uintptr_t ra)
{
	struct cpu_record *rec = ring_reserve(&cpu.ring);
	if (!rec) {
		atomic_fetch_add(&cpu.dropped, 1);
		return;
	}
	rec->depth = sample_unsampled_stack(entry_pc, ra, t->stack_lo, t->stack_hi, rec->pcs, cpu.max_frames);
	rec->has_context = context_read_self(&rec->context);
	rec->tid = (int)sys_gettid();
	rec->slot = slot;
	rec->cpu_ns = cpu_ns;
	atomic_fetch_add(&cpu.taken, 1);
	ring_publish(&cpu.ring, rec);
}

/* The CPU time of the expiries the kernel had not delivered to the ending
 * thread of `slot`, taken at "[unsampled]" (0 when none, or the thread has
 * no timer); false if the thread blocks our signal: it was not sampled by
 * choice, and where its time went is not guessed.  The timer is disarmed
 * first, so that no expiry comes after the count. */
static bool take_expiries_missed(int slot, uint64_t entry_pc, uintptr_t ra, uint64_t *missed_ns)
{
	*missed_ns = 0;
	struct thread_slot *t = &thread_slots[slot];
	int timer = atomic_load(&t->timer_id);
	if (!atomic_load_explicit(&cpu.running, memory_order_acquire) || timer < 0)
		return true;
	/* A signal already raised was delivered as the call returned (or, on
	 * kernels that drop the queued signal of a timer set again, is
	 * counted below). */
	struct sys_itimerspec off;
	rt_memset(&off, 0, sizeof(off));
	if (sys_timer_settime(timer, 0, &off, NULL) != 0)
		return true;
	uint64_t now = rt_thread_cpu_ns();
	uint64_t first = atomic_load(&t->cpu_first_expiry_ns);
	uint64_t period = atomic_load_explicit(&cpu.period_ns, memory_order_relaxed);
	uint64_t mask = 0;
	if (sys_rt_sigprocmask(SIG_BLOCK, NULL, &mask) != 0 || (mask & (1ull << (cpu.signo - 1))))
		return false;
	uint64_t passed = now >= first && period != 0 ? 1 + (now - first) / period : 0;
	uint64_t delivered = atomic_load(&t->cpu_expiries);
	if (passed > delivered) {
		*missed_ns = (passed - delivered) * period + t->cpu_carried_ns;
		t->cpu_carried_ns = 0;
		take_missed(slot, t, *missed_ns, entry_pc, ra);
	}
	return true;
}

/* With entry_pc 0 (cpu_stop), "[unsampled]" stands alone. */
__attribute__((noinline)) void cpu_thread_ending(int slot, uint64_t entry_pc, uintptr_t ra)
{
	uint64_t missed_ns;
	if (slot < 0 || slot >= THREADS_MAX || !take_expiries_missed(slot, entry_pc, ra, &missed_ns))
		return;
	/* The wall profile's running samples are the CPU signals: the same
	 * expiries, and what its visits owe the thread, would be lost too; and
	 * so would the life of a thread no visit saw. */
	wall_thread_ending(slot, missed_ns, entry_pc, ra);
}

void cpu_drain(void)
{
	if (!ring_has_ready(&cpu.ring))
		return;
	uint64_t start_ns = 0; /* read at the first record: an empty ring costs no clock read */
	uint32_t cursor = 0;
	for (struct cpu_record *r; (r = ring_next_ready(&cpu.ring, &cursor)) != NULL;) {
		if (start_ns == 0)
			start_ns = rt_thread_cpu_ns();
		struct sw_value values[2] = { { SW_V_CPU_SAMPLES, 1 },
					      { SW_V_CPU_TIME, (int64_t)r->cpu_ns } };
		struct sw_label labels[2 + CONTEXT_MAX_SAMPLE_LABELS] = {
			{ .key = SW_LABEL_THREAD_ID, .num = r->tid },
			{ .key = SW_LABEL_THREAD_NAME, .str = threads_name(r->slot) },
		};
		uint32_t n_labels = 2;
		static struct context_labels ctx; /* sampler thread only */
		if (r->has_context) {
			ctx.value = r->context;
			context_to_labels(&ctx);
			for (uint32_t k = 0; k < ctx.n; k++)
				labels[n_labels++] = ctx.labels[k];
		}
		struct sw_sample s = { r->pcs, r->depth, values, 2, labels, n_labels };
		(void)recorder_add(cpu.rec, &s);
		ring_release(&cpu.ring, r);
	}
	if (start_ns) {
		uint64_t end_ns = rt_thread_cpu_ns();
		atomic_fetch_add_explicit(&cpu.drain_ns, end_ns > start_ns ? end_ns - start_ns : 0,
					  memory_order_relaxed);
	}
}

/* SIGPROF unless the program uses it; else a free real-time signal. */
static int choose_signal(void)
{
	if (rt_signal_find_free(SIGPROF, SIGPROF) == SIGPROF)
		return SIGPROF;
	return rt_signal_find_free(64, 64 - SIGNAL_PROBE_TRIES * 4 + 1);
}

int cpu_start(const struct sw_config *cfg, struct recorder *rec)
{
	if (atomic_load(&cpu.running))
		return 0;
	cpu.cfg = cfg;
	cpu.rec = rec;
	cpu.max_frames = cfg->max_frames;
	atomic_store(&cpu.period_ns, RT_NS_PER_SEC / cfg->cpu_hz);
	if (ring_init(&cpu.ring, RING_RECORDS,
		      sizeof(struct cpu_record) + (cfg->max_frames + 2) * sizeof(uint64_t)) < 0)
		return -ENOMEM;
	rt_rng_seed(&cpu.rng);
	cpu.signo = choose_signal();
	if (cpu.signo < 0) {
		rt_warn("no free signal for CPU sampling (SIGPROF and the real-time signals are "
			"in use); CPU profiling is off");
		return -EBUSY;
	}
	long r = rt_signal_install(cpu.signo, cpu_signal_handler, &cpu.previous);
	if (r < 0)
		return (int)r;
	atomic_store_explicit(&cpu.running, 1, memory_order_release);
	wall_cpu_period(atomic_load(&cpu.period_ns));
	rt_info("CPU profiling at %u Hz on signal %d", cfg->cpu_hz, cpu.signo);
	return 0;
}

void cpu_stop(void)
{
	/* The stopping thread (at exit, the one that ends the process) takes
	 * its own undelivered expiries; other threads' are not known to be
	 * readable (their signal masks), and are lost. */
	if (atomic_load(&cpu.running))
		cpu_thread_ending(threads_find((int)sys_gettid()), 0, 0);
	if (!atomic_exchange(&cpu.running, 0))
		return;
	wall_cpu_period(0);
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1))
		cpu_thread_removed(s, 0);
	/* Our handler stays installed but inert: a signal already queued for a
	 * thread must not meet the default action (which would kill the process). */
}

bool cpu_running(void) { return atomic_load(&cpu.running) != 0; }

void cpu_check_handler(void)
{
	if (!atomic_load(&cpu.running))
		return;
	if (!rt_signal_is_ours(cpu.signo, cpu_signal_handler)) {
		rt_warn("the program replaced the handler of signal %d; CPU profiling stops",
			cpu.signo);
		cpu_stop();
	}
}

uint64_t cpu_samples_dropped(void) { return atomic_load(&cpu.dropped); }
uint64_t cpu_samples_taken(void) { return atomic_load(&cpu.taken); }

uint64_t cpu_drain_cost_ns(void) { return atomic_load_explicit(&cpu.drain_ns, memory_order_relaxed); }

void cpu_handler_cost(uint64_t *measured_ns, uint64_t *measured_samples)
{
	*measured_ns = atomic_load_explicit(&cpu.cost_ns, memory_order_relaxed);
	*measured_samples = atomic_load_explicit(&cpu.cost_samples, memory_order_relaxed);
}

uint64_t cpu_delivery_cost_ns(void)
{
	if (!atomic_load(&cpu.running))
		return 0;
	if (!rt_signal_is_ours(cpu.signo, cpu_signal_handler))
		return 0;
	/* Our handler returns at once for a signal that is not a timer's. */
	uint64_t bit = 1ull << (cpu.signo - 1), old = 0;
	if (sys_rt_sigprocmask(SIG_UNBLOCK, &bit, &old) != 0)
		return 0;
	long pid = sys_getpid(), tid = sys_gettid();
	uint64_t start = rt_thread_cpu_ns();
	for (int i = 0; i < DELIVERY_ROUNDS; i++)
		(void)sys_tgkill((int)pid, (int)tid, cpu.signo);
	uint64_t end = rt_thread_cpu_ns();
	(void)sys_rt_sigprocmask(SIG_SETMASK, &old, NULL);
	return end > start ? (end - start) / DELIVERY_ROUNDS : 0;
}

void cpu_set_rate(uint32_t hz)
{
	if (hz == 0)
		return;
	uint64_t period = RT_NS_PER_SEC / hz;
	if (atomic_exchange(&cpu.period_ns, period) == period || !atomic_load(&cpu.running))
		return;
	wall_cpu_period(period);
	/* Timer ids are allocated cyclically by the kernel, so an id deleted by
	 * a concurrent cpu_thread_removed is not handed out again meanwhile. */
	for (int s = threads_next_used(0); s >= 0; s = threads_next_used(s + 1)) {
		struct thread_slot *t = &thread_slots[s];
		int timer = atomic_load(&t->timer_id);
		int tid = atomic_load(&t->tid);
		if (timer < 0 || tid == 0)
			continue;
		struct sys_itimerspec its;
		uint64_t first = timer_spec(&its);
		(void)arm(t, timer, sys_thread_cpu_clock(tid), &its, first);
	}
}

uint32_t cpu_rate(void)
{
	uint64_t period = atomic_load(&cpu.period_ns);
	return period ? (uint32_t)((RT_NS_PER_SEC + period / 2) / period) : 0;
}
int cpu_signal(void) { return cpu.signo; }

uint64_t cpu_ring_half_fill_ns(uint32_t threads)
{
	if (!atomic_load(&cpu.running))
		return UINT64_MAX;
	/* A thread takes at most one sample per period of wall time: its CPU
	 * clock runs no faster than that. */
	return atomic_load(&cpu.period_ns) * (RING_RECORDS / 2) / RT_MAX(threads, 1u);
}

void cpu_after_fork_child(void)
{
	ring_clear(&cpu.ring);
	rt_mutex_reset(&cpu.rng_lock);
	rt_rng_seed(&cpu.rng);
}

static void cpu_flush(struct profile *finished)
{
	RT_UNUSED(finished);
	cpu_drain();
}

/* The rate in effect: the overhead cap may have lowered it. */
static int64_t cpu_period(const struct sw_config *cfg, enum sw_kind kind)
{
	RT_UNUSED(kind);
	uint32_t hz = cpu_rate();
	return (int64_t)(RT_NS_PER_SEC / (hz ? hz : cfg->cpu_hz));
}

const struct collector cpu_collector = {
	.name = "cpu",
	.kinds = SW_KIND_BIT(SW_KIND_CPU),
	.start = cpu_start,
	.stop = cpu_stop,
	.after_fork_child = cpu_after_fork_child,
	.tick = cpu_drain,
	.each_second = cpu_check_handler,
	.flush = cpu_flush,
	.period = cpu_period,
};
