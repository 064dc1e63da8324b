/* Recorder: aggregation, interning, bounds/overflow, double buffering. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "profile/profile.h"

/* Sum of one slot over every sample of a profile. */
static int64_t slot_total(const struct profile *p, enum sw_value_slot slot)
{
	int64_t sum = 0;
	struct profile_sample_view v;
	for (uint32_t i = 0; i < profile_sample_count(p); i++) {
		CHECK(profile_sample_get(p, i, &v));
		sum += v.values[slot];
	}
	return sum;
}

static const char *label_str(const struct profile *p, uint32_t id)
{
	uint32_t len;
	return profile_string(p, id, &len);
}

static void test_slot_names(void)
{
	static const char *const expect[SW_V_COUNT][2] = {
		{"cpu-samples", "count"},       {"cpu-time", "nanoseconds"},
		{"wall-samples", "count"},      {"wall-time", "nanoseconds"},
		{"alloc-samples", "count"},     {"alloc-space", "bytes"},
		{"heap-live-samples", "count"}, {"heap-live-size", "bytes"},
		{"lock-acquire", "count"},      {"lock-acquire-wait", "nanoseconds"},
		{"lock-release", "count"},      {"lock-release-hold", "nanoseconds"},
		{"exception-samples", "count"},
	};
	for (int s = 0; s < SW_V_COUNT; s++) {
		CHECK(strcmp(sw_value_type_name((enum sw_value_slot)s), expect[s][0]) == 0);
		CHECK(strcmp(sw_value_unit_name((enum sw_value_slot)s), expect[s][1]) == 0);
	}
	CHECK_EQ_U64(sw_kind_value_mask(SW_KIND_CPU), SW_V_BIT(SW_V_CPU_SAMPLES) | SW_V_BIT(SW_V_CPU_TIME));
	CHECK_EQ_U64(sw_kind_value_mask(SW_KIND_ALLOC), SW_V_BIT(SW_V_ALLOC_SAMPLES) | SW_V_BIT(SW_V_ALLOC_SPACE));
	CHECK_EQ_U64(sw_kind_value_mask(SW_KIND_LOCK), 0xfu << SW_V_LOCK_ACQUIRE);
	uint32_t all = 0;
	for (int k = 0; k < SW_KIND_COUNT; k++) {
		uint32_t m = sw_kind_value_mask((enum sw_kind)k);
		CHECK(m != 0);
		CHECK((all & m) == 0); /* kinds own disjoint slots */
		CHECK(m & SW_V_BIT(sw_kind_main_slot((enum sw_kind)k)));
		all |= m;
	}
	CHECK_EQ_U64(all, SW_V_ALL);
	CHECK(strcmp(sw_synthetic_frame_name(SW_PC_TRUNCATED), "[truncated]") == 0);
	CHECK(strcmp(sw_synthetic_frame_name(SW_PC_OVERFLOW), "[overflow]") == 0);
	CHECK(strcmp(sw_synthetic_frame_name(SW_PC_UNKNOWN), "[unknown]") == 0);
	CHECK(sw_synthetic_frame_name(0x401000) == NULL);
}

static void test_aggregates_identical_samples(void)
{
	struct profile *p = profile_create(NULL);
	CHECK(p != NULL);
	uint64_t pcs[3] = {0x1000, 0x2000, 0x3000};
	struct sw_value vals[2] = {{SW_V_CPU_SAMPLES, 1}, {SW_V_CPU_TIME, 10000000}};
	struct sw_label la[2] = {{SW_LABEL_THREAD_ID, NULL, 42, NULL}, {SW_LABEL_THREAD_NAME, "worker", 0, NULL}};
	/* Same labels in the other order: still the same sample. */
	struct sw_label lb[2] = {la[1], la[0]};
	struct sw_sample s = {pcs, 3, vals, 2, la, 2};
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	s.labels = lb;
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	struct profile_stats st;
	profile_get_stats(p, &st);
	CHECK_EQ_U64(st.samples, 1);
	CHECK_EQ_U64(st.stacks, 1);
	CHECK_EQ_U64(st.frames, 3);
	CHECK_EQ_U64(st.overflowed_adds, 0);
	CHECK_EQ_U64(profile_sample_count(p), 1);
	struct profile_sample_view v;
	CHECK(profile_sample_get(p, 0, &v));
	CHECK_EQ_U64(v.depth, 3);
	CHECK(v.pcs[0] == 0x1000 && v.pcs[2] == 0x3000);
	CHECK_EQ_U64(v.values[SW_V_CPU_SAMPLES], 3);
	CHECK_EQ_U64(v.values[SW_V_CPU_TIME], 30000000);
	CHECK_EQ_U64(v.values[SW_V_WALL_TIME], 0);
	CHECK_EQ_U64(v.n_labels, 2);
	int seen = 0;
	for (uint32_t i = 0; i < v.n_labels; i++) {
		const struct profile_label *l = &v.labels[i];
		if (strcmp(label_str(p, l->key), "thread id") == 0) {
			CHECK(l->is_num && l->num == 42 && l->num_unit == 0);
			seen++;
		} else if (strcmp(label_str(p, l->key), "thread name") == 0) {
			CHECK(!l->is_num && strcmp(label_str(p, l->str), "worker") == 0);
			seen++;
		}
	}
	CHECK_EQ_U64(seen, 2);
	CHECK(!profile_sample_get(p, 1, &v));
	profile_release(p);
}

static void test_distinct_labels_share_stack_and_strings(void)
{
	struct profile *p = profile_create(NULL);
	uint64_t pcs[2] = {0x1100, 0x2200};
	struct sw_value val = {SW_V_WALL_TIME, 5};
	for (int t = 0; t < 50; t++) {
		struct sw_label l[3] = {{"thread id", NULL, t, NULL},
					{"state", t % 2 ? "sleeping" : "had cpu", 0, NULL},
					{"span id", NULL, 7, "id"}};
		struct sw_sample s = {pcs, 2, &val, 1, l, 3};
		CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	}
	struct profile_stats st;
	profile_get_stats(p, &st);
	CHECK_EQ_U64(st.samples, 50);
	CHECK_EQ_U64(st.stacks, 1);
	/* "", thread id, state, sleeping, had cpu, span id, id */
	CHECK_EQ_U64(st.strings, 7);
	CHECK_EQ_U64(st.string_bytes, strlen("thread idstatesleepinghad cpuspan idid"));
	CHECK_EQ_U64(slot_total(p, SW_V_WALL_TIME), 250);
	profile_release(p);
}

/* Label strings are found by pointer first: a buffer rewritten in place
 * (a thread renamed, shorter, longer or a prefix of before) must still give
 * the string it holds now, and equal content at another pointer the same id. */
static void test_label_buffer_rewritten_in_place(void)
{
	struct recorder *r = recorder_create(NULL);
	CHECK(r != NULL);
	uint64_t pc = 0x1100;
	struct sw_value val = {SW_V_WALL_TIME, 1};
	static const char *const names[] = {"worker", "worker-1", "work", "", "worker-1x", "w", "x"};
	char buf[32];
	char key[16];
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			strcpy(buf, names[i]);
			strcpy(key, i % 2 ? "thread name" : "state");
			struct sw_label l[2] = {{key, buf, 0, NULL}, {"thread name", names[i], 0, NULL}};
			struct sw_sample s = {&pc, 1, &val, 1, l, 2};
			CHECK_EQ_U64(recorder_add(r, &s), PROFILE_ADD_OK);
		}
		struct profile *p = recorder_swap(r);
		CHECK(p != NULL);
		struct profile_stats st;
		profile_get_stats(p, &st);
		/* "", the two keys and the six distinct non-empty names. */
		CHECK_EQ_U64(st.strings, 9);
		CHECK_EQ_U64(st.samples, 7);
		struct profile_sample_view v;
		for (uint32_t i = 0; i < profile_sample_count(p); i++) {
			CHECK(profile_sample_get(p, i, &v));
			CHECK_EQ_U64(v.n_labels, 2);
			/* Both labels of a sample name the same string, by the same id. */
			uint32_t a = v.labels[0].str, b = v.labels[1].str;
			CHECK_EQ_U64(a, b);
			CHECK(strcmp(label_str(p, a), names[i]) == 0);
			int states = 0;
			for (uint32_t k = 0; k < 2; k++)
				states += strcmp(label_str(p, v.labels[k].key), "state") == 0;
			CHECK_EQ_U64(states, i % 2 ? 0 : 1);
		}
		profile_release(p);
	}
	recorder_destroy(r);
}

static void test_value_slots_widen(void)
{
	struct profile *p = profile_create(NULL);
	uint64_t pcs[1] = {0x4444};
	struct sw_value cpu[2] = {{SW_V_CPU_SAMPLES, 1}, {SW_V_CPU_TIME, 100}};
	struct sw_value wall[3] = {{SW_V_WALL_SAMPLES, 1}, {SW_V_WALL_TIME, 7}, {SW_V_WALL_TIME, 3}};
	struct sw_value ex = {SW_V_EXCEPTION_SAMPLES, -2};
	struct sw_sample s = {pcs, 1, cpu, 2, NULL, 0};
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	s.values = wall;
	s.n_values = 3;
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	s.values = &ex;
	s.n_values = 1;
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	s.values = cpu;
	s.n_values = 2;
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	CHECK_EQ_U64(profile_sample_count(p), 1);
	struct profile_sample_view v;
	CHECK(profile_sample_get(p, 0, &v));
	CHECK_EQ_U64(v.values[SW_V_CPU_SAMPLES], 2);
	CHECK_EQ_U64(v.values[SW_V_CPU_TIME], 200);
	CHECK_EQ_U64(v.values[SW_V_WALL_SAMPLES], 1);
	CHECK_EQ_U64(v.values[SW_V_WALL_TIME], 10);
	CHECK(v.values[SW_V_EXCEPTION_SAMPLES] == -2);
	profile_release(p);
}

static void test_synthetic_stacks(void)
{
	struct profile_limits lim = {.max_depth = 8};
	struct profile *p = profile_create(&lim);
	struct sw_value val = {SW_V_CPU_SAMPLES, 1};
	struct sw_sample empty = {NULL, 0, &val, 1, NULL, 0};
	CHECK_EQ_U64(profile_add(p, &empty), PROFILE_ADD_OK);
	uint64_t deep[20];
	for (int i = 0; i < 20; i++)
		deep[i] = 0x10000 + (uint64_t)i * 16;
	struct sw_sample s = {deep, 20, &val, 1, NULL, 0};
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	/* A different root beyond the cut aggregates with the first. */
	deep[19] = 0x99999;
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	CHECK_EQ_U64(profile_sample_count(p), 2);
	struct profile_sample_view v;
	CHECK(profile_sample_get(p, 0, &v));
	CHECK(v.depth == 1 && v.pcs[0] == SW_PC_UNKNOWN);
	CHECK(profile_sample_get(p, 1, &v));
	CHECK_EQ_U64(v.depth, 8);
	CHECK(v.pcs[0] == 0x10000 && v.pcs[6] == 0x10000 + 6 * 16);
	CHECK(v.pcs[7] == SW_PC_TRUNCATED);
	CHECK_EQ_U64(v.values[SW_V_CPU_SAMPLES], 2);
	profile_release(p);
}

static void test_invalid_and_zero_samples(void)
{
	struct profile *p = profile_create(NULL);
	uint64_t pcs[1] = {0x5000};
	struct sw_value bad = {SW_V_COUNT, 1};
	struct sw_sample s = {pcs, 1, &bad, 1, NULL, 0};
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_INVALID);
	struct sw_value zero = {SW_V_CPU_TIME, 0};
	s.values = &zero;
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	struct sw_value one = {SW_V_CPU_TIME, 1};
	struct sw_sample nopcs = {NULL, 3, &one, 1, NULL, 0};
	CHECK_EQ_U64(profile_add(p, &nopcs), PROFILE_ADD_INVALID);
	struct sw_label nokey = {NULL, "x", 0, NULL};
	struct sw_sample s2 = {pcs, 1, &one, 1, &nokey, 1};
	CHECK_EQ_U64(profile_add(p, &s2), PROFILE_ADD_INVALID);
	CHECK_EQ_U64(profile_sample_count(p), 0);
	profile_release(p);
}

/* Each bound, once reached, sends new samples to the one overflow sample
 * while existing samples keep aggregating and totals stay exact. */
static void test_bound_max_samples(void)
{
	struct profile_limits lim = {.max_samples = 10};
	struct profile *p = profile_create(&lim);
	struct sw_value val[2] = {{SW_V_ALLOC_SAMPLES, 1}, {SW_V_ALLOC_SPACE, 4096}};
	int overflowed = 0;
	for (uint64_t i = 0; i < 25; i++) {
		uint64_t pcs[2] = {0x7000 + i * 16, 0x9000};
		struct sw_sample s = {pcs, 2, val, 2, NULL, 0};
		if (profile_add(p, &s) == PROFILE_ADD_OVERFLOW)
			overflowed++;
	}
	/* An existing sample still aggregates past the bound. */
	uint64_t first[2] = {0x7000, 0x9000};
	struct sw_sample again = {first, 2, val, 2, NULL, 0};
	CHECK_EQ_U64(profile_add(p, &again), PROFILE_ADD_OK);
	CHECK_EQ_U64(overflowed, 15);
	struct profile_stats st;
	profile_get_stats(p, &st);
	CHECK_EQ_U64(st.samples, 10);
	CHECK_EQ_U64(st.overflowed_adds, 15);
	CHECK_EQ_U64(profile_sample_count(p), 11);
	CHECK_EQ_U64(slot_total(p, SW_V_ALLOC_SAMPLES), 26);
	CHECK_EQ_U64(slot_total(p, SW_V_ALLOC_SPACE), 26 * 4096);
	struct profile_sample_view v;
	CHECK(profile_sample_get(p, 10, &v));
	CHECK(v.depth == 1 && v.pcs[0] == SW_PC_OVERFLOW && v.n_labels == 0);
	CHECK_EQ_U64(v.stack_id, profile_stack_count(p) - 1);
	CHECK_EQ_U64(v.values[SW_V_ALLOC_SAMPLES], 15);
	profile_release(p);
}

static void test_bound_string_bytes(void)
{
	struct profile_limits lim = {.max_string_bytes = 64};
	struct profile *p = profile_create(&lim);
	uint64_t pcs[1] = {0x8000};
	struct sw_value val = {SW_V_WALL_SAMPLES, 1};
	char name[32];
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "endpoint-%02d", i); /* 11 bytes */
		struct sw_label l = {"trace endpoint", name, 0, NULL}; /* key: 14 bytes once */
		struct sw_sample s = {pcs, 1, &val, 1, &l, 1};
		if (profile_add(p, &s) == PROFILE_ADD_OK)
			ok++;
	}
	struct profile_stats st;
	profile_get_stats(p, &st);
	CHECK(st.string_bytes <= 64);
	CHECK_EQ_U64(ok, 4); /* 14 + 4 * 11 = 58; a fifth would make 69 */
	CHECK_EQ_U64(st.overflowed_adds, 16);
	CHECK_EQ_U64(slot_total(p, SW_V_WALL_SAMPLES), 20);
	profile_release(p);
}

static void test_bound_frames(void)
{
	struct profile_limits lim = {.max_frames = 100};
	struct profile *p = profile_create(&lim);
	struct sw_value val = {SW_V_CPU_SAMPLES, 3};
	uint64_t pcs[30];
	int ok = 0;
	for (uint64_t i = 0; i < 5; i++) {
		for (int f = 0; f < 30; f++)
			pcs[f] = 0x20000 + i * 0x1000 + (uint64_t)f * 8;
		struct sw_sample s = {pcs, 30, &val, 1, NULL, 0};
		if (profile_add(p, &s) == PROFILE_ADD_OK)
			ok++;
	}
	struct profile_stats st;
	profile_get_stats(p, &st);
	CHECK_EQ_U64(ok, 3);
	CHECK_EQ_U64(st.frames, 90);
	CHECK_EQ_U64(st.overflowed_adds, 2);
	CHECK_EQ_U64(slot_total(p, SW_V_CPU_SAMPLES), 15);
	profile_release(p);
}

static void test_dropped_labels(void)
{
	struct profile *p = profile_create(NULL);
	uint64_t pcs[1] = {0x8800};
	struct sw_value val = {SW_V_CPU_SAMPLES, 1};
	struct sw_label l[SW_MAX_LABELS + 3];
	char keys[SW_MAX_LABELS + 3][16];
	for (int i = 0; i < SW_MAX_LABELS + 3; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		l[i] = (struct sw_label){keys[i], "v", 0, NULL};
	}
	struct sw_sample s = {pcs, 1, &val, 1, l, SW_MAX_LABELS + 3};
	CHECK_EQ_U64(profile_add(p, &s), PROFILE_ADD_OK);
	struct profile_stats st;
	profile_get_stats(p, &st);
	CHECK_EQ_U64(st.dropped_labels, 3);
	struct profile_sample_view v;
	CHECK(profile_sample_get(p, 0, &v));
	CHECK_EQ_U64(v.n_labels, SW_MAX_LABELS);
	profile_release(p);
}

/* ---- double buffering under concurrent writers ---- */

#define WRITERS 4
#define ADDS_PER_WRITER 20000
#define WRITER_STRIDE 2000

/* Swaps made by the test's swapping thread, for the writers to wait on. */
static atomic_uint swaps_done;
/* Writers that have finished. */
static atomic_int writers_done;

struct writer_arg {
	struct recorder *r;
	int id;
	int64_t written_time;
	int64_t written_samples;
};

static void *writer_main(void *argp)
{
	struct writer_arg *a = argp;
	char tname[16];
	snprintf(tname, sizeof(tname), "writer-%d", a->id);
	for (int i = 0; i < ADDS_PER_WRITER; i++) {
		/* Every WRITER_STRIDE adds, wait for the next swap (up to 1 s), so
		 * the adds span many swaps however the threads are scheduled. */
		if (i > 0 && i % WRITER_STRIDE == 0) {
			unsigned seen = atomic_load(&swaps_done);
			for (int w = 0; w < 10000 && atomic_load(&swaps_done) == seen; w++) {
				struct timespec ts = {0, 100000};
				nanosleep(&ts, NULL);
			}
		}
		uint64_t pcs[4] = {0x1000 + (uint64_t)(i % 37) * 16, 0x2000 + (uint64_t)(i % 5) * 16, 0x3000,
				   0x4000 + (uint64_t)a->id};
		int64_t t = 1000 + i % 97;
		struct sw_value vals[2] = {{SW_V_CPU_SAMPLES, 1}, {SW_V_CPU_TIME, t}};
		struct sw_label l[2] = {{"thread id", NULL, a->id, NULL}, {"thread name", tname, 0, NULL}};
		struct sw_sample s = {pcs, 4, vals, 2, l, 2};
		if (recorder_add(a->r, &s) == PROFILE_ADD_INVALID)
			break;
		a->written_time += t;
		a->written_samples++;
	}
	atomic_fetch_add(&writers_done, 1);
	return NULL;
}

static void test_concurrent_writers_and_swaps(void)
{
	/* A small sample bound so the overflow path is exercised concurrently too. */
	struct profile_limits lim = {.max_samples = 300};
	struct recorder *r = recorder_create(&lim);
	CHECK(r != NULL);
	struct writer_arg args[WRITERS];
	pthread_t th[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		args[i] = (struct writer_arg){r, i, 0, 0};
		CHECK(pthread_create(&th[i], NULL, writer_main, &args[i]) == 0);
	}
	int64_t got_time = 0, got_samples = 0;
	int swaps = 0, nonempty_before_join = 0;
	uint64_t prev_end = 0;
	bool times_chain = true;
	/* At least 200 swaps, and on until every writer is done. */
	for (int k = 0; k < 200 || (atomic_load(&writers_done) < WRITERS && k < 100000); k++) {
		struct profile *done = recorder_swap(r);
		CHECK(done != NULL);
		if (!done)
			break;
		swaps++;
		atomic_fetch_add(&swaps_done, 1);
		struct profile_stats st;
		profile_get_stats(done, &st);
		if (prev_end && st.start_ns != prev_end)
			times_chain = false;
		if (st.end_ns < st.start_ns)
			times_chain = false;
		prev_end = st.end_ns;
		int64_t t = slot_total(done, SW_V_CPU_TIME);
		if (t)
			nonempty_before_join++;
		got_time += t;
		got_samples += slot_total(done, SW_V_CPU_SAMPLES);
		profile_release(done);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
	int64_t want_time = 0, want_samples = 0;
	for (int i = 0; i < WRITERS; i++) {
		CHECK(pthread_join(th[i], NULL) == 0);
		want_time += args[i].written_time;
		want_samples += args[i].written_samples;
	}
	struct profile *last = recorder_swap(r);
	CHECK(last != NULL);
	if (last) {
		got_time += slot_total(last, SW_V_CPU_TIME);
		got_samples += slot_total(last, SW_V_CPU_SAMPLES);
		profile_release(last);
	}
	CHECK(times_chain);
	CHECK(swaps >= 200);
	/* The swaps really raced with the writers (each waits for a swap
	 * between strides, so a writer's strides but the last land in
	 * different swapped profiles: 9 unless a wait timed out). */
	CHECK(nonempty_before_join >= 3);
	printf("  %d of %d swapped profiles held samples\n", nonempty_before_join, swaps);
	CHECK_EQ_U64(want_samples, WRITERS * ADDS_PER_WRITER);
	CHECK_EQ_U64(got_samples, want_samples);
	CHECK_EQ_U64(got_time, want_time);
	recorder_destroy(r);
}

static void test_swap_then_detached_add(void)
{
	struct recorder *r = recorder_create(NULL);
	uint64_t pcs[2] = {0xa000, 0xb000};
	struct sw_value cpu = {SW_V_CPU_TIME, 10};
	struct sw_sample s = {pcs, 2, &cpu, 1, NULL, 0};
	CHECK_EQ_U64(recorder_add(r, &s), PROFILE_ADD_OK);
	struct profile *done = recorder_swap(r);
	CHECK(done != NULL);
	/* The heap collector appends its live set to the finished profile. */
	struct sw_value heap[2] = {{SW_V_HEAP_LIVE_SAMPLES, 2}, {SW_V_HEAP_LIVE_SIZE, 1 << 20}};
	struct sw_sample hs = {pcs, 2, heap, 2, NULL, 0};
	CHECK_EQ_U64(profile_add(done, &hs), PROFILE_ADD_OK);
	CHECK_EQ_U64(profile_sample_count(done), 1);
	CHECK_EQ_U64(slot_total(done, SW_V_HEAP_LIVE_SIZE), 1 << 20);
	CHECK_EQ_U64(slot_total(done, SW_V_CPU_TIME), 10);
	/* The new active profile is empty and independent. */
	struct profile *next = recorder_swap(r);
	CHECK(next != NULL && profile_sample_count(next) == 0);
	profile_release(done);
	profile_release(next);
	recorder_destroy(r);
}

static void test_after_fork_child_empties(void)
{
	struct recorder *r = recorder_create(NULL);
	uint64_t pcs[1] = {0xc000};
	struct sw_value cpu = {SW_V_CPU_TIME, 10};
	struct sw_sample s = {pcs, 1, &cpu, 1, NULL, 0};
	CHECK_EQ_U64(recorder_add(r, &s), PROFILE_ADD_OK);
	recorder_after_fork_child(r);
	CHECK_EQ_U64(recorder_add(r, &s), PROFILE_ADD_OK);
	struct profile *done = recorder_swap(r);
	CHECK(done != NULL);
	CHECK_EQ_U64(slot_total(done, SW_V_CPU_TIME), 10);
	profile_release(done);
	recorder_destroy(r);
}

/* fork() while another thread is inside recorder_add: the child must get
 * an empty, usable recorder whatever state the lock was in. */
static atomic_int fork_writer_stop;

static void *fork_writer_main(void *argp)
{
	struct recorder *r = argp;
	for (uint64_t i = 0; !atomic_load(&fork_writer_stop); i++) {
		uint64_t pcs[3] = {0x1000 + (i % 4096) * 16, 0x2000, 0x3000};
		struct sw_value v = {SW_V_WALL_TIME, 1};
		struct sw_label l = {"thread id", NULL, (int64_t)(i % 64), NULL};
		struct sw_sample s = {pcs, 3, &v, 1, &l, 1};
		recorder_add(r, &s);
	}
	return NULL;
}

static int fork_child_check(struct recorder *r)
{
	rt_heap_after_fork_child();
	recorder_after_fork_child(r);
	uint64_t pcs[1] = {0xdead0};
	struct sw_value v = {SW_V_WALL_TIME, 5};
	struct sw_sample s = {pcs, 1, &v, 1, NULL, 0};
	if (recorder_add(r, &s) != PROFILE_ADD_OK)
		return 1;
	struct profile *done = recorder_swap(r);
	if (!done)
		return 2;
	struct profile_sample_view view;
	bool ok = profile_sample_count(done) == 1 && profile_sample_get(done, 0, &view) &&
		  view.values[SW_V_WALL_TIME] == 5 && view.pcs[0] == 0xdead0;
	profile_release(done);
	return ok ? 0 : 3;
}

static void test_fork_while_writing(void)
{
	struct recorder *r = recorder_create(NULL);
	pthread_t th;
	atomic_store(&fork_writer_stop, 0);
	CHECK(pthread_create(&th, NULL, fork_writer_main, r) == 0);
	int good = 0;
	for (int k = 0; k < 40; k++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			_exit(fork_child_check(r));
		int status = 0;
		CHECK(waitpid(pid, &status, 0) == pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			good++;
		else
			fprintf(stderr, "  child %d: status %d\n", k, status);
	}
	atomic_store(&fork_writer_stop, 1);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_EQ_U64(good, 40);
	recorder_destroy(r);
}

int main(void)
{
	RUN(test_slot_names);
	RUN(test_aggregates_identical_samples);
	RUN(test_distinct_labels_share_stack_and_strings);
	RUN(test_label_buffer_rewritten_in_place);
	RUN(test_value_slots_widen);
	RUN(test_synthetic_stacks);
	RUN(test_invalid_and_zero_samples);
	RUN(test_bound_max_samples);
	RUN(test_bound_string_bytes);
	RUN(test_bound_frames);
	RUN(test_dropped_labels);
	RUN(test_concurrent_writers_and_swaps);
	RUN(test_swap_then_detached_add);
	RUN(test_after_fork_child_empties);
	RUN(test_fork_while_writing);
	return CHECK_DONE();
}
