/* The overhead cap's controller: arithmetic only (see overhead.h).
 *
 * The scalable cost is proportional to the sampling rates (each sample
 * costs a signal and an unwind), so when a window is over budget the scale
 * is multiplied by allowed/measured scalable cost, where the allowed part
 * is what keeps the total at three quarters of the budget, so noise does
 * not bounce it straight back over.  A cut is at most 8x per
 * window.  Raising waits for OVERHEAD_CALM_WINDOWS windows under half the
 * budget and at most doubles the rates, so a program whose load comes and
 * goes does not make the rates oscillate. */
#include "collect/overhead.h"

#define PPM 1000000ull
#define MAX_CUT 8u

void overhead_ctl_init(struct overhead_ctl *c, uint32_t budget_ppm)
{
	rt_memset(c, 0, sizeof(*c));
	c->budget_ppm = (uint32_t)RT_MIN((uint64_t)budget_ppm, PPM);
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

/* The scalable cost allowed so that the total stays at the target (or, if
 * the fixed cost is already past the target, at the budget); 0: none. */
static uint64_t allowed_scalable_ppm(const struct overhead_ctl *c, uint64_t fixed_ppm,
				     uint32_t target_ppm)
{
	if (fixed_ppm < target_ppm)
		return target_ppm - fixed_ppm;
	return fixed_ppm < c->budget_ppm ? c->budget_ppm - fixed_ppm : 0;
}

static enum overhead_decision lower_rates(struct overhead_ctl *c, uint64_t scalable_ppm,
					  uint64_t fixed_ppm, uint32_t target_ppm)
{
	c->calm_windows = 0;
	uint64_t allowed = allowed_scalable_ppm(c, fixed_ppm, target_ppm);
	c->fixed_over = allowed == 0;
	if (allowed == 0 || scalable_ppm == 0)
		return OVERHEAD_HOLD;
	if (c->scale_ppm <= OVERHEAD_SCALE_MIN) {
		c->saturated = true;
		return OVERHEAD_HOLD;
	}
	uint64_t next = scaled(c->scale_ppm, allowed, scalable_ppm);
	next = RT_MAX(next, c->scale_ppm / MAX_CUT);
	next = RT_MAX(next, OVERHEAD_SCALE_MIN);
	if (next >= c->scale_ppm)
		next = c->scale_ppm - 1;
	c->scale_ppm = (uint32_t)next;
	c->lowered++;
	return OVERHEAD_LOWER;
}

static enum overhead_decision raise_rates(struct overhead_ctl *c, uint64_t scalable_ppm,
					  uint64_t fixed_ppm, uint32_t target_ppm)
{
	if (++c->calm_windows < OVERHEAD_CALM_WINDOWS)
		return OVERHEAD_HOLD;
	c->calm_windows = 0;
	uint64_t doubled = 2ull * c->scale_ppm;
	uint64_t allowed = allowed_scalable_ppm(c, fixed_ppm, target_ppm);
	uint64_t next = scalable_ppm ? scaled(c->scale_ppm, allowed, scalable_ppm) : doubled;
	next = RT_MIN(RT_MIN(next, doubled), (uint64_t)OVERHEAD_SCALE_FULL);
	if (next <= c->scale_ppm)
		return OVERHEAD_HOLD;
	c->scale_ppm = (uint32_t)next;
	c->raised++;
	return OVERHEAD_RAISE;
}

enum overhead_decision overhead_ctl_tick(struct overhead_ctl *c, uint64_t scalable_ns,
					 uint64_t fixed_ns, uint64_t process_ns)
{
	uint64_t own = scalable_ns + fixed_ns;
	c->win_scalable_ns += scalable_ns;
	c->win_fixed_ns += fixed_ns;
	c->win_app_ns += process_ns > own ? process_ns - own : 0;
	if (++c->win_ticks < OVERHEAD_WINDOW_TICKS)
		return OVERHEAD_HOLD;
	uint64_t scalable = c->win_scalable_ns, fixed = c->win_fixed_ns, app = c->win_app_ns;
	uint64_t ticks = c->win_ticks;
	c->win_scalable_ns = c->win_fixed_ns = c->win_app_ns = 0;
	c->win_ticks = 0;
	if (c->budget_ppm == 0 || app < OVERHEAD_MIN_APP_NS_PER_TICK * ticks)
		return OVERHEAD_HOLD;
	uint32_t scalable_ppm = ratio_ppm(scalable, app), fixed_ppm = ratio_ppm(fixed, app);
	c->last_ppm = ratio_ppm(scalable + fixed, app);
	c->judged++;
	uint32_t target_ppm = c->budget_ppm / 4u * 3u;
	if (c->last_ppm > c->budget_ppm)
		return lower_rates(c, scalable_ppm, fixed_ppm, target_ppm);
	c->saturated = false;
	c->fixed_over = false;
	if (c->scale_ppm < OVERHEAD_SCALE_FULL && c->last_ppm < c->budget_ppm / 2u)
		return raise_rates(c, scalable_ppm, fixed_ppm, target_ppm);
	c->calm_windows = 0;
	return OVERHEAD_HOLD;
}

uint32_t overhead_next_hz(uint32_t configured_hz, uint32_t current_hz, uint32_t delivered_hz,
			  uint32_t old_scale, uint32_t new_scale)
{
	if (new_scale >= OVERHEAD_SCALE_FULL || old_scale == 0)
		return configured_hz;
	uint64_t base = delivered_hz && delivered_hz < current_hz ? delivered_hz : current_hz;
	uint64_t hz = (base * new_scale + old_scale / 2) / old_scale;
	return (uint32_t)RT_MAX(1ull, RT_MIN(hz, (uint64_t)configured_hz));
}
