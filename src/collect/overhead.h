/* The overhead cap (STOWAWAY_MAX_OVERHEAD_PCT): the profiler measures the
 * CPU time it costs the process and scales its sampling rates down when
 * that exceeds the budget, and back up when it falls well below.
 *
 * Two parts:
 *  - the controller (overhead.c): pure arithmetic on measured CPU times,
 *    one decision per window of OVERHEAD_WINDOW_TICKS ticks; unit-tested;
 *  - the probe (overhead_probe.c): measures, once a second on the sampler
 *    thread, our threads' CPU clocks plus the signal handler's cost, feeds
 *    the controller, applies the resulting rates to the collectors, and
 *    describes them for the profile's comments.
 *
 * Overhead is our CPU time divided by the application's (the process's
 * CPU time minus ours): the slowdown a CPU-bound program would see. */
#ifndef STOWAWAY_COLLECT_OVERHEAD_H
#define STOWAWAY_COLLECT_OVERHEAD_H

#include "config/config.h"
#include "rt/rt.h"

#define OVERHEAD_SCALE_FULL 1000000u /* the configured rates */
#define OVERHEAD_SCALE_MIN 10000u    /* 1% of them at the lowest */
#define OVERHEAD_WINDOW_TICKS 3u     /* seconds of measurement per decision */
/* A window in which the application used less CPU than this per tick is not
 * judged: our fixed costs against an idle program say nothing about rates. */
#define OVERHEAD_MIN_APP_NS_PER_TICK 20000000ull
/* After lowering, rates go back up only after this many calm windows. */
#define OVERHEAD_CALM_WINDOWS 2u

enum overhead_decision { OVERHEAD_HOLD, OVERHEAD_LOWER, OVERHEAD_RAISE };

struct overhead_ctl {
	uint32_t budget_ppm; /* max overhead, parts per million of application CPU */
	uint32_t scale_ppm;  /* current rates as a fraction of the configured ones */
	uint32_t last_ppm;   /* overhead measured in the last judged window */
	uint32_t judged;     /* windows judged (busy enough to say something) */
	uint32_t lowered, raised; /* decisions so far */
	bool saturated;      /* over budget at the lowest scale */
	bool fixed_over;     /* over budget from costs no rate controls */
	/* the window being measured */
	uint64_t win_scalable_ns, win_fixed_ns, win_app_ns;
	uint32_t win_ticks;
	uint32_t calm_windows;
};

/* budget_ppm: STOWAWAY_MAX_OVERHEAD_PCT in parts per million of application
 * CPU (2% = 20000); 0 disables the cap (scale stays full). */
void overhead_ctl_init(struct overhead_ctl *c, uint32_t budget_ppm);
/* One tick's measurement since the previous tick: our CPU time that is
 * proportional to the rates we control (scalable_ns: the sampling
 * handler), our other CPU time (fixed_ns: our threads), and the whole
 * process's CPU time (ours included).  Only the scalable part is scaled:
 * when the fixed part alone exceeds the budget, lowering rates would cost
 * profile quality and gain nothing, so the controller holds and sets
 * fixed_over.  Returns what was decided; c->scale_ppm holds the new scale. */
enum overhead_decision overhead_ctl_tick(struct overhead_ctl *c, uint64_t scalable_ns,
					 uint64_t fixed_ns, uint64_t process_ns);
/* The next rate of a collector whose cost follows the events it really
 * delivers: from what it delivered in the window (events per second of
 * application CPU; below `current_hz` when the kernel's tick caps it; 0:
 * unknown, use current_hz), times new_scale/old_scale, within
 * [1, configured_hz]; exactly configured_hz at full scale. */
uint32_t overhead_next_hz(uint32_t configured_hz, uint32_t current_hz, uint32_t delivered_hz,
			  uint32_t old_scale, uint32_t new_scale);

/* ---- the probe, on the sampler thread ---- */

/* Once a second: measure, decide, apply.  Resets itself on the first call,
 * after a fork (new pid) and after a restart of the collectors. */
void overhead_tick(const struct sw_config *cfg);
/* What the profiler has cost this process so far (since its start, or its
 * fork), as the probe counts it: the CPU clocks of our own threads (each
 * started in this process), and on the host's threads CPU samples times
 * the handler's measured cost plus the kernel's delivery of the signal,
 * and allocation samples times their measured cost.  Not counted: the
 * unsampled interposed calls, the wall profile's signal handler, an export
 * running on a host thread (at exit).  Any thread. */
uint64_t overhead_spent_ns(void);
/* Where overhead_spent_ns counts samples from: at the collectors' start,
 * and in a fork child (the counters are inherited). */
void overhead_spent_from_here(void);

/* One line for the profile's comments: measured overhead, budget and the
 * effective rates.  Any thread; returns the line's length. */
size_t overhead_describe(char *buf, size_t cap);

#endif
