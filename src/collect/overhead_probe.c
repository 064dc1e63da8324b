/* The overhead cap's probe (see overhead.h): what the profiler costs, once a
 * second on the sampler thread.
 *
 * Our cost is the CPU clocks of our own threads (sampler, scheduler, any
 * other we start) plus the CPU-timer handler, which runs on the
 * host's threads: samples taken times (the handler's measured CPU time per
 * sample, cpu_handler_cost, plus the kernel's delivery cost,
 * cpu_delivery_cost_ns, measured once per start).  The handler's part and
 * the time our sampler spends recording CPU samples (cpu_drain_cost_ns)
 * scale with the CPU rate; the wall ticks' time on the sampler thread
 * (wall_cpu_ns) scales with the wall rate; sampled allocations (alloc_sample_cost, measured on the
 * allocating threads) scale with the allocation rate; the rest of our
 * threads' time counts as fixed cost.  One scale applies to all three
 * rates.  Not counted: the unsampled allocation path (a few ns per call, no
 * rate controls it) and the wall sampler's signal handler on the host's
 * running threads.
 *
 * State is the sampler thread's alone; what overhead_describe reads is
 * published in atomics, so the scheduler (or a fork child that never saw a
 * tick) never waits for a lock. */
#include "collect/overhead.h"
#include "collect/alloc.h"
#include "collect/cpu.h"
#include "collect/threads.h"
#include "collect/wall.h"
#include "rt/thread.h"
#include "rt/sys.h"

static struct {
	int sampler_tid; /* the probe restarts when the sampler thread changes */
	uint32_t configured_cpu_hz;
	uint32_t configured_wall_hz;
	uint64_t configured_alloc_bytes;
	uint64_t last_alloc_samples, last_alloc_cost_ns, last_alloc_cost_samples;
	uint64_t last_wall_ns; /* wall_cpu_ns() at the previous tick */
	struct overhead_ctl ctl;
	uint64_t last_process_ns;
	uint64_t last_samples;
	uint64_t last_cost_ns, last_cost_samples;
	uint64_t last_drain_ns;
	uint64_t delivery_ns;
	uint64_t last_threads_ns; /* thread_own_cpu_ns() at the previous tick */
	/* this window's parts, for the debug log */
	uint64_t win_threads_ns, win_drain_ns, win_handler_ns, win_wall_ns, win_samples, win_process_ns;
	uint64_t win_alloc_samples, alloc_sample_ns;
} probe;

/* Published for overhead_describe. */
static struct {
	atomic_uint budget_ppm;
	atomic_uint overhead_ppm;
	atomic_ullong delivery_ns; /* the kernel's part of a CPU sample, measured at a reset */
	atomic_uint judged;
	atomic_uint cpu_hz, configured_cpu_hz;
	atomic_uint delivered_cpu_hz; /* CPU samples per second of application CPU, last window */
	atomic_uint wall_hz, configured_wall_hz;
	atomic_ullong alloc_bytes, configured_alloc_bytes;
	atomic_uint lowered, raised;
	atomic_int saturated;
	atomic_int fixed_over;
} pub;


/* CPU time our threads used since the previous call (thread_own_cpu_ns:
 * those that ended since count up to their end). */
static uint64_t own_threads_ns(void)
{
	uint64_t now = thread_own_cpu_ns();
	uint64_t used = now > probe.last_threads_ns ? now - probe.last_threads_ns : 0;
	probe.last_threads_ns = now;
	return used;
}

/* Mean of a measured subset, in ns (0 when nothing was measured). */
static uint64_t mean_ns(uint64_t ns, uint64_t samples) { return samples ? ns / samples : 0; }

/* CPU time the timer handler cost the host's threads since the previous call. */
static uint64_t handler_ns(void)
{
	uint64_t samples = cpu_samples_taken() + cpu_samples_dropped();
	uint64_t cost_ns = 0, cost_samples = 0;
	cpu_handler_cost(&cost_ns, &cost_samples);
	uint64_t d_samples = samples - probe.last_samples;
	uint64_t d_ns = cost_ns - probe.last_cost_ns, d_measured = cost_samples - probe.last_cost_samples;
	uint64_t per_sample = d_measured ? d_ns / d_measured : mean_ns(cost_ns, cost_samples);
	probe.last_samples = samples;
	probe.last_cost_ns = cost_ns;
	probe.last_cost_samples = cost_samples;
	probe.win_samples += d_samples;
	return d_samples * (per_sample + probe.delivery_ns);
}

/* CPU time sampled allocations cost the host's threads since the previous call. */
static uint64_t alloc_ns(void)
{
	uint64_t samples = alloc_samples_taken(), cost_ns = 0, cost_samples = 0;
	alloc_sample_cost(&cost_ns, &cost_samples);
	uint64_t d_samples = samples - probe.last_alloc_samples;
	uint64_t d_ns = cost_ns - probe.last_alloc_cost_ns;
	uint64_t d_measured = cost_samples - probe.last_alloc_cost_samples;
	uint64_t per_sample = d_measured ? d_ns / d_measured : mean_ns(cost_ns, cost_samples);
	probe.last_alloc_samples = samples;
	probe.last_alloc_cost_ns = cost_ns;
	probe.last_alloc_cost_samples = cost_samples;
	probe.win_alloc_samples += d_samples;
	probe.alloc_sample_ns = per_sample;
	return d_samples * per_sample;
}

/* The sample counters overhead_spent_ns starts from: zero at a process's
 * start, the parent's at a fork. */
static struct {
	uint64_t cpu_samples, alloc_samples;
} spent_base;

void overhead_spent_from_here(void)
{
	spent_base.cpu_samples = cpu_samples_taken();
	spent_base.alloc_samples = alloc_samples_taken();
}

uint64_t overhead_spent_ns(void)
{
	uint64_t handler_ns = 0, handler_samples = 0, sampled_ns = 0, sampled = 0;
	cpu_handler_cost(&handler_ns, &handler_samples);
	alloc_sample_cost(&sampled_ns, &sampled);
	uint64_t cpu = cpu_samples_taken(), alloc = alloc_samples_taken();
	uint64_t spent = thread_own_cpu_ns();
	if (cpu > spent_base.cpu_samples)
		spent += (cpu - spent_base.cpu_samples) *
			 (mean_ns(handler_ns, handler_samples) + atomic_load(&pub.delivery_ns));
	if (alloc > spent_base.alloc_samples)
		spent += (alloc - spent_base.alloc_samples) * mean_ns(sampled_ns, sampled);
	return spent;
}

static void publish(void)
{
	atomic_store(&pub.budget_ppm, probe.ctl.budget_ppm);
	atomic_store(&pub.overhead_ppm, probe.ctl.last_ppm);
	/* A sampler stopped for the exit flush keeps its last rate: the profile
	 * being finished was taken at that rate, not with CPU sampling off. */
	if (cpu_running())
		atomic_store(&pub.cpu_hz, cpu_rate());
	atomic_store(&pub.configured_cpu_hz, probe.configured_cpu_hz);
	if (wall_running())
		atomic_store(&pub.wall_hz, wall_rate());
	atomic_store(&pub.configured_wall_hz, probe.configured_wall_hz);
	atomic_store(&pub.alloc_bytes, probe.configured_alloc_bytes ? alloc_sample_bytes() : 0);
	atomic_store(&pub.configured_alloc_bytes, probe.configured_alloc_bytes);
	atomic_store(&pub.lowered, probe.ctl.lowered);
	atomic_store(&pub.raised, probe.ctl.raised);
	atomic_store(&pub.saturated, probe.ctl.saturated);
	atomic_store(&pub.fixed_over, probe.ctl.fixed_over);
	atomic_store(&pub.judged, probe.ctl.judged);
}

static void reset(const struct sw_config *cfg, int tid)
{
	rt_memset(&probe, 0, sizeof(probe));
	probe.sampler_tid = tid;
	probe.configured_cpu_hz = cfg->cpu_hz;
	probe.configured_wall_hz = cfg->wall_hz;
	bool alloc_on = (cfg->kinds & (SW_KIND_BIT(SW_KIND_ALLOC) | SW_KIND_BIT(SW_KIND_HEAP))) != 0;
	probe.configured_alloc_bytes = alloc_on ? cfg->alloc_sample_bytes : 0;
	/* Before the baselines: the calibration's signals are not the host's samples. */
	probe.delivery_ns = cpu_delivery_cost_ns();
	atomic_store(&pub.delivery_ns, probe.delivery_ns);
	overhead_ctl_init(&probe.ctl, cfg->max_overhead_ppm);
	/* A fork child inherits the parent's rates, but starts a new controller. */
	if (cpu_running())
		cpu_set_rate(cfg->cpu_hz);
	if (wall_running())
		wall_set_rate(cfg->wall_hz);
	if (probe.configured_alloc_bytes) {
		alloc_set_sample_bytes(probe.configured_alloc_bytes);
		probe.last_alloc_samples = alloc_samples_taken();
		alloc_sample_cost(&probe.last_alloc_cost_ns, &probe.last_alloc_cost_samples);
	}
	probe.last_process_ns = rt_process_cpu_ns();
	probe.last_samples = cpu_samples_taken() + cpu_samples_dropped();
	cpu_handler_cost(&probe.last_cost_ns, &probe.last_cost_samples);
	probe.last_drain_ns = cpu_drain_cost_ns();
	probe.last_wall_ns = wall_cpu_ns();
	probe.last_threads_ns = thread_own_cpu_ns(); /* their CPU so far is history */
	/* Rates published by a parent before fork are not this process's. */
	atomic_store(&pub.cpu_hz, 0);
	atomic_store(&pub.wall_hz, 0);
	atomic_store(&pub.delivered_cpu_hz, 0);
	publish();
}

/* Samples per second of application CPU in the window that just closed. */
static uint32_t delivered_hz(void)
{
	uint64_t own = probe.win_threads_ns + probe.win_drain_ns + probe.win_handler_ns + probe.win_wall_ns;
	uint64_t app = probe.win_process_ns > own ? probe.win_process_ns - own : 0;
	if (app < 1000000ull)
		return 0;
	uint64_t hz = probe.win_samples * RT_NS_PER_SEC / app;
	return hz > UINT32_MAX ? UINT32_MAX : (uint32_t)hz;
}

/* A limit in parts per million as a percentage without trailing zeros
 * ("2", "0.5", "0.0125"). */
#define PCT_TEXT_CAP 16
static void pct_text(uint32_t ppm, char out[PCT_TEXT_CAP])
{
	size_t n = rt_snprintf(out, PCT_TEXT_CAP, "%u.%04u", ppm / 10000u, ppm % 10000u);
	n = RT_MIN(n, (size_t)PCT_TEXT_CAP - 1u);
	while (n > 0 && out[n - 1] == '0')
		out[--n] = 0;
	if (n > 0 && out[n - 1] == '.')
		out[--n] = 0;
}

static void apply(const struct sw_config *cfg, enum overhead_decision d, uint32_t old_scale)
{
	if (probe.configured_alloc_bytes) {
		/* Fewer samples means more bytes between them: the mean grows as the
		 * scale falls (at most 100x, the scale's floor). */
		uint64_t mean = probe.configured_alloc_bytes * OVERHEAD_SCALE_FULL / probe.ctl.scale_ppm;
		alloc_set_sample_bytes(mean);
	}
	if (wall_running()) {
		/* The wall sampler ticks on its own clock: its rate is the scale's. */
		uint64_t whz = (uint64_t)cfg->wall_hz * probe.ctl.scale_ppm / OVERHEAD_SCALE_FULL;
		wall_set_rate(whz ? (uint32_t)whz : 1);
	}
	if (!cpu_running())
		return;
	uint32_t hz = overhead_next_hz(cfg->cpu_hz, cpu_rate(), delivered_hz(), old_scale,
				       probe.ctl.scale_ppm);
	cpu_set_rate(hz);
	char limit[PCT_TEXT_CAP];
	pct_text(cfg->max_overhead_ppm, limit);
	rt_info("profiler overhead %u.%02u%% of the application's CPU (limit %s%%): CPU sampling %s "
		"to %u Hz (configured %u Hz)",
		probe.ctl.last_ppm / 10000u, probe.ctl.last_ppm % 10000u / 100u, limit,
		d == OVERHEAD_LOWER ? "lowered" : "raised", hz, cfg->cpu_hz);
}

void overhead_tick(const struct sw_config *cfg)
{
	int tid = (int)sys_gettid();
	if (tid != probe.sampler_tid) {
		reset(cfg, tid);
		return;
	}
	uint64_t process = rt_process_cpu_ns();
	uint64_t d_process = process > probe.last_process_ns ? process - probe.last_process_ns : 0;
	probe.last_process_ns = process;
	uint64_t threads = own_threads_ns(), handler = handler_ns() + alloc_ns();
	/* Recording samples is part of our threads' time, but grows with the rate. */
	uint64_t drain_total = cpu_drain_cost_ns();
	uint64_t drain = RT_MIN(drain_total - probe.last_drain_ns, threads);
	probe.last_drain_ns = drain_total;
	threads -= drain;
	/* The wall ticks' time (on the sampler thread) follows the wall rate. */
	uint64_t wall_total = wall_cpu_ns();
	uint64_t wall_ns = RT_MIN(wall_total - probe.last_wall_ns, threads);
	probe.last_wall_ns = wall_total;
	threads -= wall_ns;
	probe.win_wall_ns += wall_ns;
	probe.win_threads_ns += threads;
	probe.win_drain_ns += drain;
	probe.win_handler_ns += handler;
	probe.win_process_ns += d_process;
	uint32_t old_scale = probe.ctl.scale_ppm;
	enum overhead_decision d =
		overhead_ctl_tick(&probe.ctl, handler + drain + wall_ns, threads, d_process);
	if (d != OVERHEAD_HOLD)
		apply(cfg, d, old_scale);
	if (probe.ctl.win_ticks == 0) {
		/* Kernels expire CPU timers on their tick: 1000 Hz configured may
		 * be 250 delivered.  Said in the comments, so nobody is misled. */
		if (cpu_running())
			atomic_store(&pub.delivered_cpu_hz, delivered_hz());
		rt_debug("overhead window: our threads %llu us + wall sampler %llu us + recording "
			 "samples %llu us, handlers %llu us (%llu CPU samples, delivery %llu ns each; "
			 "%llu allocation samples, %llu ns each), process %llu us",
			 (unsigned long long)(probe.win_threads_ns / 1000),
			 (unsigned long long)(probe.win_wall_ns / 1000),
			 (unsigned long long)(probe.win_drain_ns / 1000),
			 (unsigned long long)(probe.win_handler_ns / 1000),
			 (unsigned long long)probe.win_samples, (unsigned long long)probe.delivery_ns,
			 (unsigned long long)probe.win_alloc_samples,
			 (unsigned long long)probe.alloc_sample_ns,
			 (unsigned long long)(probe.win_process_ns / 1000));
		probe.win_threads_ns = probe.win_drain_ns = probe.win_handler_ns = probe.win_wall_ns = 0;
		probe.win_samples = probe.win_process_ns = probe.win_alloc_samples = 0;
	}
	if (probe.ctl.saturated || probe.ctl.fixed_over) {
		char limit[PCT_TEXT_CAP];
		pct_text(cfg->max_overhead_ppm, limit);
		if (probe.ctl.saturated)
			rt_log_once(RT_LOG_WARN, "profiler overhead is above STOWAWAY_MAX_OVERHEAD_PCT=%s "
						 "even at the lowest sampling rates", limit);
		if (probe.ctl.fixed_over)
			rt_log_once(RT_LOG_WARN, "profiler overhead is above STOWAWAY_MAX_OVERHEAD_PCT=%s "
						 "from costs the sampling rates do not control (our "
						 "threads); rates are kept", limit);
	}
	publish();
}

size_t overhead_describe(char *buf, size_t cap)
{
	uint32_t budget = atomic_load(&pub.budget_ppm), ppm = atomic_load(&pub.overhead_ppm);
	uint32_t hz = atomic_load(&pub.cpu_hz), configured = atomic_load(&pub.configured_cpu_hz);
	char measured[192], rates[256], limit[PCT_TEXT_CAP];
	pct_text(budget, limit);
	if (atomic_load(&pub.judged) == 0)
		/* Also before the probe's first tick, when nothing is published. */
		rt_snprintf(measured, sizeof(measured), "overhead not measured yet");
	else if (budget == 0)
		rt_snprintf(measured, sizeof(measured), "overhead cap off");
	else
		rt_snprintf(measured, sizeof(measured), "overhead %u.%02u%% of application CPU in the last measured window (limit %s%%)%s",
			    ppm / 10000u, ppm % 10000u / 100u, limit,
			    atomic_load(&pub.saturated)	 ? ", over the limit at the lowest rates"
			    : atomic_load(&pub.fixed_over) ? ", over the limit from costs no rate controls"
							   : "");
	uint32_t whz = atomic_load(&pub.wall_hz), wconf = atomic_load(&pub.configured_wall_hz);
	size_t n = hz ? rt_snprintf(rates, sizeof(rates), "cpu %u Hz (configured %u Hz)", hz, configured)
		      : rt_snprintf(rates, sizeof(rates), "cpu off");
	uint32_t delivered = atomic_load(&pub.delivered_cpu_hz);
	if (hz && delivered && n < sizeof(rates))
		n += rt_snprintf(rates + n, sizeof(rates) - n, " delivering %u samples per CPU second",
				 delivered);
	if (whz && n < sizeof(rates))
		n += rt_snprintf(rates + n, sizeof(rates) - n, ", wall %u Hz (configured %u Hz)", whz,
				 wconf);
	uint64_t abytes = atomic_load(&pub.alloc_bytes), aconf = atomic_load(&pub.configured_alloc_bytes);
	if (abytes && n < sizeof(rates))
		(void)rt_snprintf(rates + n, sizeof(rates) - n,
				  ", alloc one sample per %llu bytes (configured %llu)",
				  (unsigned long long)abytes, (unsigned long long)aconf);
	return rt_snprintf(buf, cap, "stowaway: %s; sampling rates lowered %u times, raised %u "
				     "times; effective rates: %s",
			   measured, atomic_load(&pub.lowered), atomic_load(&pub.raised), rates);
}
