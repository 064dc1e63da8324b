/* The overhead cap's controller (src/collect/overhead.c): decisions on
 * synthetic measurements, and a simulated process whose profiler cost is
 * proportional to the sampling rate. */
#include "check.h"
#include "collect/overhead.h"
#include "config/config.h"

#define MS 1000000ull
#define APP_PER_TICK (1000 * MS) /* one busy core */

/* Feeds one window of ticks where our rate-proportional cost was
 * scalable_ppm of the application's CPU and our other cost fixed_ppm. */
static enum overhead_decision window2(struct overhead_ctl *c, uint64_t app_ns, uint64_t scalable_ppm,
				      uint64_t fixed_ppm)
{
	enum overhead_decision d = OVERHEAD_HOLD;
	for (unsigned i = 0; i < OVERHEAD_WINDOW_TICKS; i++) {
		uint64_t scalable = app_ns * scalable_ppm / 1000000ull;
		uint64_t fixed = app_ns * fixed_ppm / 1000000ull;
		d = overhead_ctl_tick(c, scalable, fixed, app_ns + scalable + fixed);
		if (i + 1 < OVERHEAD_WINDOW_TICKS)
			CHECK(d == OVERHEAD_HOLD);
	}
	return d;
}

/* All of our cost proportional to the rates. */
static enum overhead_decision window(struct overhead_ctl *c, uint64_t app_ns, uint64_t own_ppm)
{
	return window2(c, app_ns, own_ppm, 0);
}

static void test_under_budget_holds(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 20000);
	CHECK_EQ_U64(c.budget_ppm, 20000);
	for (int w = 0; w < 10; w++)
		CHECK(window(&c, APP_PER_TICK, 15000) == OVERHEAD_HOLD);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL);
	CHECK_EQ_U64(c.judged, 10);
	/* 1.5% measured (rounding of the integer division aside) */
	CHECK(c.last_ppm >= 14999 && c.last_ppm <= 15000);
	CHECK_EQ_U64(c.lowered + c.raised, 0);
}

static void test_over_budget_lowers_to_target(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 20000);
	CHECK(window(&c, APP_PER_TICK, 50000) == OVERHEAD_LOWER);
	/* aim at 3/4 of the budget: 1e6 * 15000 / 50000 */
	CHECK(c.scale_ppm >= 299990 && c.scale_ppm <= 300000);
	CHECK_EQ_U64(c.lowered, 1);
	/* the window restarts after a decision */
	CHECK_EQ_U64(c.win_ticks, 0);
	CHECK_EQ_U64(c.win_scalable_ns + c.win_fixed_ns + c.win_app_ns, 0);
}

static void test_cut_is_bounded(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 10000);
	CHECK(window(&c, APP_PER_TICK, 1000000) == OVERHEAD_LOWER); /* 100% */
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL / 8);
}

static void test_idle_process_not_judged(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 20000);
	/* 10 ms of application CPU per second, we use as much: 100%, but idle */
	for (int w = 0; w < 5; w++)
		CHECK(window(&c, 10 * MS, 1000000) == OVERHEAD_HOLD);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL);
	CHECK_EQ_U64(c.judged, 0);
	/* process CPU below ours (clock skew): no underflow, not judged */
	for (unsigned i = 0; i < OVERHEAD_WINDOW_TICKS; i++)
		(void)overhead_ctl_tick(&c, 50 * MS, 0, 10 * MS);
	CHECK_EQ_U64(c.judged, 0);
}

static void test_cap_off(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 0);
	for (int w = 0; w < 5; w++)
		CHECK(window(&c, APP_PER_TICK, 900000) == OVERHEAD_HOLD);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL);
}

static void test_raise_waits_and_at_most_doubles(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 20000);
	CHECK(window(&c, APP_PER_TICK, 200000) == OVERHEAD_LOWER);
	uint32_t low = c.scale_ppm;
	CHECK_EQ_U64(low, OVERHEAD_SCALE_FULL / 8);
	/* between half the budget and the budget: stay */
	CHECK(window(&c, APP_PER_TICK, 15000) == OVERHEAD_HOLD);
	CHECK(window(&c, APP_PER_TICK, 15000) == OVERHEAD_HOLD);
	CHECK_EQ_U64(c.scale_ppm, low);
	/* calm, but only after OVERHEAD_CALM_WINDOWS windows in a row */
	for (unsigned i = 1; i < OVERHEAD_CALM_WINDOWS; i++)
		CHECK(window(&c, APP_PER_TICK, 1000) == OVERHEAD_HOLD);
	CHECK(window(&c, APP_PER_TICK, 1000) == OVERHEAD_RAISE);
	CHECK_EQ_U64(c.scale_ppm, 2 * low);
	CHECK_EQ_U64(c.raised, 1);
	/* calm at zero cost: doubles until full, never above */
	for (int w = 0; w < 20; w++)
		(void)window(&c, APP_PER_TICK, 0);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL);
}

static void test_saturates_at_minimum(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 10000);
	/* a handler cost that does not fall with the rate (say, the program's
	 * threads multiply as fast as we slow down) */
	for (int w = 0; w < 20; w++)
		(void)window(&c, APP_PER_TICK, 50000);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_MIN);
	CHECK(c.saturated);
	CHECK(window(&c, APP_PER_TICK, 50000) == OVERHEAD_HOLD);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_MIN);
	/* back under the budget: no longer saturated */
	(void)window(&c, APP_PER_TICK, 8000);
	CHECK(!c.saturated);
}

static void test_fixed_cost_is_not_scaled(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 20000);
	/* our threads alone cost 3%: lowering the sampling rate cannot help */
	for (int w = 0; w < 5; w++)
		CHECK(window2(&c, APP_PER_TICK, 5000, 30000) == OVERHEAD_HOLD);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL);
	CHECK(c.fixed_over);
	CHECK(!c.saturated);
	/* 1% fixed, 3% scalable: scale the scalable part to the 0.5% left of
	 * the 1.5% target */
	CHECK(window2(&c, APP_PER_TICK, 30000, 10000) == OVERHEAD_LOWER);
	CHECK(!c.fixed_over);
	CHECK(c.scale_ppm >= 166600 && c.scale_ppm <= 166667);
	/* fixed between the target and the budget: what is left of the budget */
	overhead_ctl_init(&c, 20000);
	CHECK(window2(&c, APP_PER_TICK, 20000, 16000) == OVERHEAD_LOWER);
	CHECK(c.scale_ppm >= 199990 && c.scale_ppm <= 200000);
}

/* A process where the profiler's sampling costs full_ppm of the
 * application at full rates, proportionally less at lower rates. */
static uint64_t plant_ppm(const struct overhead_ctl *c, uint64_t full_ppm)
{
	return full_ppm * c->scale_ppm / OVERHEAD_SCALE_FULL;
}

static void test_simulated_process_converges_and_recovers(void)
{
	struct overhead_ctl c;
	overhead_ctl_init(&c, 20000);
	/* expensive settings: 12% at full rates */
	int changes_late = 0;
	for (int w = 0; w < 40; w++) {
		enum overhead_decision d = window2(&c, APP_PER_TICK, plant_ppm(&c, 120000), 1000);
		if (w >= 10 && d != OVERHEAD_HOLD)
			changes_late++;
	}
	uint64_t settled = plant_ppm(&c, 120000) + 1000;
	CHECK(settled <= c.budget_ppm);
	CHECK(settled >= c.budget_ppm / 2);
	CHECK_EQ_U64(changes_late, 0); /* no oscillation once settled */
	CHECK(c.scale_ppm < OVERHEAD_SCALE_FULL / 5);
	/* the program's work gets cheaper to sample (e.g. shallower stacks) */
	for (int w = 0; w < 40; w++)
		(void)window2(&c, APP_PER_TICK, plant_ppm(&c, 6000), 1000);
	CHECK_EQ_U64(c.scale_ppm, OVERHEAD_SCALE_FULL);
	CHECK(c.raised >= 1);
}

static void test_next_hz(void)
{
	/* delivered as asked: scaled from the current rate */
	CHECK_EQ_U64(overhead_next_hz(100, 100, 100, OVERHEAD_SCALE_FULL, 250000), 25);
	CHECK_EQ_U64(overhead_next_hz(100, 100, 0, OVERHEAD_SCALE_FULL, 250000), 25);
	/* the kernel's tick delivered 250 of the 1000 asked: scale what was delivered */
	CHECK_EQ_U64(overhead_next_hz(1000, 1000, 250, OVERHEAD_SCALE_FULL, 200000), 50);
	/* delivered more than asked (samples of the previous rate): the asked rate */
	CHECK_EQ_U64(overhead_next_hz(1000, 50, 120, 200000, 400000), 100);
	/* never 0 Hz, never above the configuration, exactly it at full scale */
	CHECK_EQ_U64(overhead_next_hz(100, 2, 2, 100000, OVERHEAD_SCALE_MIN), 1);
	CHECK_EQ_U64(overhead_next_hz(100, 80, 80, 100000, 900000), 100);
	CHECK_EQ_U64(overhead_next_hz(1000, 50, 50, 500000, OVERHEAD_SCALE_FULL), 1000);
}

/* STOWAWAY_MAX_OVERHEAD_PCT: whole or decimal percent, to ppm. */
static void test_limit_parses_decimals(void)
{
	static const struct {
		const char *text;
		bool ok;
		uint32_t ppm;
	} cases[] = {
		{ "2", true, 20000 },     { "0.5", true, 5000 },  { "0.25", true, 2500 },
		{ "0.0125", true, 125 },  { "100", true, 1000000 }, { "1.", true, 10000 },
		{ "0.01", true, 100 },    { "0.001", false, 0 },  { "100.5", false, 0 },
		{ "101", false, 0 },      { "0.00001", false, 0 }, { "", false, 0 },
		{ ".5", false, 0 },       { "-1", false, 0 },     { "1.5%", false, 0 },
		{ "1e2", false, 0 },      { "99999999999999999999", false, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t ppm = 0;
		bool ok = config_parse_pct_ppm(cases[i].text, 100, 1000000, &ppm);
		CHECK(ok == cases[i].ok);
		if (ok && cases[i].ok)
			CHECK_EQ_U64(ppm, cases[i].ppm);
	}
}

int main(void)
{
	RUN(test_limit_parses_decimals);
	RUN(test_under_budget_holds);
	RUN(test_over_budget_lowers_to_target);
	RUN(test_cut_is_bounded);
	RUN(test_idle_process_not_judged);
	RUN(test_cap_off);
	RUN(test_raise_waits_and_at_most_doubles);
	RUN(test_saturates_at_minimum);
	RUN(test_fixed_cost_is_not_scaled);
	RUN(test_simulated_process_converges_and_recovers);
	RUN(test_next_hz);
	return CHECK_DONE();
}
