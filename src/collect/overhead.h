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
	/* the window being measured */
	uint64_t win_own_ns, win_app_ns;
	uint32_t win_ticks;
	uint32_t calm_windows;
};

/* budget_pct: STOWAWAY_MAX_OVERHEAD_PCT; 0 disables the cap (scale stays full). */
void overhead_ctl_init(struct overhead_ctl *c, uint32_t budget_pct);
/* One tick's measurement: own_ns of our CPU time and process_ns of the
 * whole process's (ours included) since the previous tick.  Returns what
 * was decided; c->scale_ppm holds the new scale. */
enum overhead_decision overhead_ctl_tick(struct overhead_ctl *c, uint64_t own_ns,
					 uint64_t process_ns);
/* The configured rates scaled: an event rate (Hz, at least 1) and a
 * sampling interval (bytes, grows as the scale shrinks). */
uint32_t overhead_scale_hz(uint32_t configured_hz, uint32_t scale_ppm);
uint64_t overhead_scale_interval(uint64_t configured, uint32_t scale_ppm);

/* ---- the probe, on the sampler thread ---- */

/* Once a second: measure, decide, apply.  Resets itself on the first call,
 * after a fork (new pid) and after a restart of the collectors. */
void overhead_tick(const struct sw_config *cfg);
/* One line for the profile's comments: measured overhead, budget and the
 * effective rates.  Any thread; returns the line's length. */
size_t overhead_describe(char *buf, size_t cap);

#endif
