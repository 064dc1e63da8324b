/* The overhead cap's controller: arithmetic only (see overhead.h).
 *
 * Cost is taken as proportional to the sampling rates (each sample costs a
 * signal, an unwind and a drain), so when a window is over budget the scale
 * is multiplied by target/measured, aiming at three quarters of the budget
 * so noise does not bounce it straight back over.  A cut is at most 8x per
 * window.  Raising waits for OVERHEAD_CALM_WINDOWS windows under half the
 * budget and at most doubles the rates, so a program whose load comes and
 * goes does not make the rates oscillate. */
#include "collect/overhead.h"

#define PPM 1000000ull
#define MAX_CUT 8u

void overhead_ctl_init(struct overhead_ctl *c, uint32_t budget_pct)
{
	rt_memset(c, 0, sizeof(*c));
	c->budget_ppm = (uint32_t)RT_MIN((uint64_t)budget_pct * 10000ull, PPM);
	c->scale_ppm = OVERHEAD_SCALE_FULL;
}

static uint32_t ratio_ppm(uint64_t num, uint64_t den)
{
	uint64_t r = num / den * PPM + num % den * PPM / den;
	return r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
}

/* scale * num / den, in 64 bits (scale <= 1e6, num and den <= 2^32). */
static uint64_t scaled(uint32_t scale, uint64_t num, uint64_t den)
{
	return den ? (uint64_t)scale * num / den : (uint64_t)scale;
}

static enum overhead_decision lower_rates(struct overhead_ctl *c, uint32_t target_ppm)
{
	c->calm_windows = 0;
	if (c->scale_ppm <= OVERHEAD_SCALE_MIN) {
		c->saturated = true;
		return OVERHEAD_HOLD;
	}
	uint64_t next = scaled(c->scale_ppm, target_ppm, c->last_ppm);
	next = RT_MAX(next, c->scale_ppm / MAX_CUT);
	next = RT_MAX(next, OVERHEAD_SCALE_MIN);
	if (next >= c->scale_ppm)
		next = c->scale_ppm - 1;
	c->scale_ppm = (uint32_t)next;
	c->lowered++;
	return OVERHEAD_LOWER;
}

static enum overhead_decision raise_rates(struct overhead_ctl *c, uint32_t target_ppm)
{
	if (++c->calm_windows < OVERHEAD_CALM_WINDOWS)
		return OVERHEAD_HOLD;
	c->calm_windows = 0;
	uint64_t doubled = 2ull * c->scale_ppm;
	uint64_t next = c->last_ppm ? scaled(c->scale_ppm, target_ppm, c->last_ppm) : doubled;
	next = RT_MIN(RT_MIN(next, doubled), (uint64_t)OVERHEAD_SCALE_FULL);
	if (next <= c->scale_ppm)
		return OVERHEAD_HOLD;
	c->scale_ppm = (uint32_t)next;
	c->raised++;
	return OVERHEAD_RAISE;
}

enum overhead_decision overhead_ctl_tick(struct overhead_ctl *c, uint64_t own_ns, uint64_t process_ns)
{
	c->win_own_ns += own_ns;
	c->win_app_ns += process_ns > own_ns ? process_ns - own_ns : 0;
	if (++c->win_ticks < OVERHEAD_WINDOW_TICKS)
		return OVERHEAD_HOLD;
	uint64_t own = c->win_own_ns, app = c->win_app_ns, ticks = c->win_ticks;
	c->win_own_ns = c->win_app_ns = 0;
	c->win_ticks = 0;
	if (c->budget_ppm == 0 || app < OVERHEAD_MIN_APP_NS_PER_TICK * ticks)
		return OVERHEAD_HOLD;
	c->last_ppm = ratio_ppm(own, app);
	c->judged++;
	uint32_t target_ppm = c->budget_ppm / 4u * 3u;
	if (c->last_ppm > c->budget_ppm)
		return lower_rates(c, target_ppm);
	c->saturated = false;
	if (c->scale_ppm < OVERHEAD_SCALE_FULL && c->last_ppm < c->budget_ppm / 2u)
		return raise_rates(c, target_ppm);
	c->calm_windows = 0;
	return OVERHEAD_HOLD;
}

uint32_t overhead_scale_hz(uint32_t configured_hz, uint32_t scale_ppm)
{
	uint64_t hz = ((uint64_t)configured_hz * scale_ppm + PPM / 2) / PPM;
	return hz < 1 ? 1 : (uint32_t)RT_MIN(hz, (uint64_t)configured_hz);
}

uint64_t overhead_scale_interval(uint64_t configured, uint32_t scale_ppm)
{
	if (scale_ppm == 0 || scale_ppm >= OVERHEAD_SCALE_FULL)
		return configured;
	uint64_t whole = configured / scale_ppm, part = configured % scale_ppm;
	if (whole > (UINT64_MAX - PPM) / PPM)
		return UINT64_MAX;
	return whole * PPM + part * PPM / scale_ppm;
}
