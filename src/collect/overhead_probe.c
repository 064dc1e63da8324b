/* The overhead cap's probe (see overhead.h): what the profiler costs, once a
 * second on the sampler thread.
 *
 * Our cost is the CPU clocks of our own threads (sampler, scheduler, any
 * other we start) plus the CPU-timer handler, which runs on the host's
 * threads: samples taken times (the handler's measured CPU time per sample,
 * cpu_handler_cost, plus the kernel's delivery cost, cpu_delivery_cost_ns,
 * measured once per start).  The allocation hooks' cost is not counted: the
 * allocation collector does not expose it yet.
 *
 * State is the sampler thread's alone; what overhead_describe reads is
 * published in atomics, so the scheduler (or a fork child that never saw a
 * tick) never waits for a lock. */
#include "collect/overhead.h"
#include "collect/cpu.h"
#include "core/thread.h"
#include "rt/sys.h"

#define OWN_THREADS_MAX 8
#define RESCAN_EVERY_TICKS 10u

struct own_thread {
	int tid;
	uint64_t last_ns;
};

static struct {
	int sampler_tid; /* the probe restarts when the sampler thread changes */
	uint32_t configured_cpu_hz;
	struct overhead_ctl ctl;
	uint64_t last_process_ns;
	uint64_t last_samples;
	uint64_t last_cost_ns, last_cost_samples;
	uint64_t delivery_ns;
	bool delivery_measured;
	struct own_thread own[OWN_THREADS_MAX];
	int n_own;
	uint32_t ticks;
	bool rescan;
} probe;

/* Published for overhead_describe. */
static struct {
	atomic_uint budget_ppm;
	atomic_uint overhead_ppm;
	atomic_uint judged;
	atomic_uint scale_ppm;
	atomic_uint cpu_hz, configured_cpu_hz;
	atomic_uint lowered, raised;
	atomic_int saturated;
} pub;

/* The CPU clock of another thread of this process (Linux clockid encoding). */
static int thread_clock(int tid) { return (int)((~(unsigned)tid << 3) | 6u); }

struct dirent64_head {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static bool own_known(int tid)
{
	for (int i = 0; i < probe.n_own; i++)
		if (probe.own[i].tid == tid)
			return true;
	return false;
}

/* Adds our threads not yet known.  At a reset their CPU so far is history
 * (baseline now); found later, a thread is new and all its CPU counts. */
static void scan_own_threads(bool baseline_now)
{
	long fd = sys_open("/proc/self/task", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return;
	uint8_t buf[4096];
	for (int pass = 0; pass < 10000; pass++) {
		long n = sys_getdents64((int)fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			const struct dirent64_head *d = (const void *)(buf + off);
			if (d->reclen == 0)
				break;
			off += d->reclen;
			uint64_t tid;
			if (!rt_parse_u64(d->name, rt_strnlen(d->name, 16), &tid) || tid > 0x7fffffff ||
			    !thread_is_own((int)tid) || own_known((int)tid) ||
			    probe.n_own >= OWN_THREADS_MAX)
				continue;
			probe.own[probe.n_own].tid = (int)tid;
			probe.own[probe.n_own].last_ns = baseline_now ? rt_clock_ns(thread_clock((int)tid)) : 0;
			probe.n_own++;
		}
	}
	(void)sys_close((int)fd);
}

/* CPU time our threads used since the previous call; forgets gone threads. */
static uint64_t own_threads_ns(void)
{
	if (probe.rescan || probe.ticks % RESCAN_EVERY_TICKS == 0) {
		scan_own_threads(false);
		probe.rescan = false;
	}
	uint64_t sum = 0;
	for (int i = 0; i < probe.n_own;) {
		uint64_t now = rt_clock_ns(thread_clock(probe.own[i].tid));
		if (now == 0) { /* exited: its slot goes to the last entry */
			probe.own[i] = probe.own[--probe.n_own];
			probe.rescan = true;
			continue;
		}
		if (now > probe.own[i].last_ns)
			sum += now - probe.own[i].last_ns;
		probe.own[i].last_ns = now;
		i++;
	}
	return sum;
}

/* CPU time the timer handler cost the host's threads since the previous call. */
static uint64_t handler_ns(void)
{
	uint64_t samples = cpu_samples_taken() + cpu_samples_dropped();
	uint64_t cost_ns = 0, cost_samples = 0;
	cpu_handler_cost(&cost_ns, &cost_samples);
	uint64_t d_samples = samples - probe.last_samples;
	uint64_t d_ns = cost_ns - probe.last_cost_ns, d_measured = cost_samples - probe.last_cost_samples;
	uint64_t per_sample = d_measured ? d_ns / d_measured : cost_samples ? cost_ns / cost_samples : 0;
	probe.last_samples = samples;
	probe.last_cost_ns = cost_ns;
	probe.last_cost_samples = cost_samples;
	return d_samples * (per_sample + probe.delivery_ns);
}

static void publish(void)
{
	atomic_store(&pub.budget_ppm, probe.ctl.budget_ppm);
	atomic_store(&pub.overhead_ppm, probe.ctl.last_ppm);
	atomic_store(&pub.scale_ppm, probe.ctl.scale_ppm);
	atomic_store(&pub.cpu_hz, cpu_running() ? cpu_rate() : 0);
	atomic_store(&pub.configured_cpu_hz, probe.configured_cpu_hz);
	atomic_store(&pub.lowered, probe.ctl.lowered);
	atomic_store(&pub.raised, probe.ctl.raised);
	atomic_store(&pub.saturated, probe.ctl.saturated);
	atomic_store(&pub.judged, probe.ctl.judged);
}

static void reset(const struct sw_config *cfg, int tid)
{
	rt_memset(&probe, 0, sizeof(probe));
	probe.sampler_tid = tid;
	probe.configured_cpu_hz = cfg->cpu_hz;
	overhead_ctl_init(&probe.ctl, cfg->max_overhead_pct);
	/* A fork child inherits the parent's rates, but starts a new controller. */
	if (cpu_running())
		cpu_set_rate(cfg->cpu_hz);
	probe.last_process_ns = rt_process_cpu_ns();
	probe.last_samples = cpu_samples_taken() + cpu_samples_dropped();
	cpu_handler_cost(&probe.last_cost_ns, &probe.last_cost_samples);
	scan_own_threads(true);
	publish();
}

static void apply(const struct sw_config *cfg, enum overhead_decision d)
{
	uint32_t scale = probe.ctl.scale_ppm;
	uint32_t hz = overhead_scale_hz(cfg->cpu_hz, scale);
	if (cpu_running())
		cpu_set_rate(hz);
	rt_info("profiler overhead %u.%02u%% of the application's CPU (limit %u%%): sampling %s "
		"to %u.%u%% of the configured rates (CPU %u Hz)",
		probe.ctl.last_ppm / 10000u, probe.ctl.last_ppm % 10000u / 100u, cfg->max_overhead_pct,
		d == OVERHEAD_LOWER ? "lowered" : "raised", scale / 10000u, scale % 10000u / 1000u, hz);
}

void overhead_tick(const struct sw_config *cfg)
{
	int tid = (int)sys_gettid();
	if (tid != probe.sampler_tid) {
		reset(cfg, tid);
		return;
	}
	probe.ticks++;
	if (!probe.delivery_measured && cpu_running()) {
		probe.delivery_ns = cpu_delivery_cost_ns();
		probe.delivery_measured = true;
		/* The calibration's own signals are not samples of the host. */
		probe.last_process_ns = rt_process_cpu_ns();
		(void)own_threads_ns();
		return;
	}
	uint64_t process = rt_process_cpu_ns();
	uint64_t d_process = process > probe.last_process_ns ? process - probe.last_process_ns : 0;
	probe.last_process_ns = process;
	uint64_t own = own_threads_ns() + handler_ns();
	enum overhead_decision d = overhead_ctl_tick(&probe.ctl, own, d_process);
	if (d != OVERHEAD_HOLD)
		apply(cfg, d);
	if (probe.ctl.saturated)
		rt_log_once(RT_LOG_WARN, "profiler overhead is above STOWAWAY_MAX_OVERHEAD_PCT=%u even "
					 "at the lowest sampling rates", cfg->max_overhead_pct);
	publish();
}

size_t overhead_describe(char *buf, size_t cap)
{
	uint32_t budget = atomic_load(&pub.budget_ppm), ppm = atomic_load(&pub.overhead_ppm);
	uint32_t scale = atomic_load(&pub.scale_ppm);
	uint32_t hz = atomic_load(&pub.cpu_hz), configured = atomic_load(&pub.configured_cpu_hz);
	char measured[96], rates[160];
	if (budget == 0)
		rt_snprintf(measured, sizeof(measured), "overhead cap off");
	else if (atomic_load(&pub.judged) == 0)
		rt_snprintf(measured, sizeof(measured), "overhead not measured yet (limit %u%%)",
			    budget / 10000u);
	else
		rt_snprintf(measured, sizeof(measured), "overhead %u.%02u%% of application CPU (limit %u%%)%s",
			    ppm / 10000u, ppm % 10000u / 100u, budget / 10000u,
			    atomic_load(&pub.saturated) ? ", over the limit at the lowest rates" : "");
	if (hz)
		rt_snprintf(rates, sizeof(rates), "cpu %u Hz (configured %u Hz)", hz, configured);
	else
		rt_snprintf(rates, sizeof(rates), "cpu off");
	return rt_snprintf(buf, cap, "stowaway: %s; sampling rates at %u.%u%% of configured, "
				     "lowered %u times, raised %u times; effective rates: %s",
			   measured, scale / 10000u, scale % 10000u / 1000u, atomic_load(&pub.lowered),
			   atomic_load(&pub.raised), rates);
}
