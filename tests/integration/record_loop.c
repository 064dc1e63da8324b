/* Samples shaped like the sampler's into a recorder, for
 * tests/integration/recorder_instructions.py: `record_loop N` makes N rounds
 * in record_rounds (the function callgrind's counts are toggled on), each
 * adding, for THREADS threads, one wall sample (thread id, thread name,
 * state) and one CPU sample (thread id, thread name) with stacks of DEPTH
 * frames, to a recorder with the library's default limits (timeline on, so
 * every add is a new sample until the timeline budget is spent).  Every
 * few rounds a thread is renamed in place (the same buffer, new content).
 * Prints the profile's stats; `record_loop N dump [max_string_bytes]` also
 * prints its string table and samples by id (timestamps as "ts"), the
 * content the encoder writes, to compare two builds of the recorder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"

#define THREADS 4
#define DEPTH 24
#define STACKS_PER_THREAD 3

static char names[THREADS][16];
static uint64_t stacks[THREADS][STACKS_PER_THREAD][DEPTH];
static const char *const states[] = { "running", "sleeping", "waiting" };

__attribute__((noinline)) static unsigned record_rounds(struct recorder *rec, long first, long rounds)
{
	unsigned failed = 0;
	for (long r = first; r < first + rounds; r++) {
		for (int t = 0; t < THREADS; t++) {
			if (r % 64 == 63)
				snprintf(names[t], sizeof(names[t]), "worker-%d.%ld", t, (r / 64) % 3);
			const uint64_t *pcs = stacks[t][r % STACKS_PER_THREAD];
			struct sw_value wall[2] = { { SW_V_WALL_SAMPLES, 1 }, { SW_V_WALL_TIME, 10000000 } };
			struct sw_label wl[3] = {
				{ .key = SW_LABEL_THREAD_ID, .num = 1000 + t },
				{ .key = SW_LABEL_THREAD_NAME, .str = names[t] },
				{ .key = SW_LABEL_STATE, .str = states[(r + t) % 3] },
			};
			struct sw_sample ws = { pcs, DEPTH, wall, 2, wl, 3 };
			failed += recorder_add(rec, &ws) != PROFILE_ADD_OK;
			struct sw_value cpu[2] = { { SW_V_CPU_SAMPLES, 1 }, { SW_V_CPU_TIME, 10000000 } };
			struct sw_sample cs = { pcs, DEPTH, cpu, 2, wl, 2 };
			failed += recorder_add(rec, &cs) != PROFILE_ADD_OK;
		}
	}
	return failed;
}

static void dump(const struct profile *p)
{
	for (uint32_t i = 0; i < profile_string_count(p); i++) {
		uint32_t len;
		const char *str = profile_string(p, i, &len);
		printf("string %u %.*s\n", i, (int)len, str);
	}
	for (uint32_t i = 0; i < profile_sample_count(p); i++) {
		struct profile_sample_view v;
		if (!profile_sample_get(p, i, &v))
			continue;
		printf("sample %u stack %u depth %u pc0 %llx labels", i, v.stack_id, v.depth,
		       (unsigned long long)(v.depth ? v.pcs[0] : 0));
		for (uint32_t k = 0; k < v.n_labels; k++) {
			const struct profile_label *l = &v.labels[k];
			uint32_t len;
			const char *key = profile_string(p, l->key, &len);
			if (l->is_num && strcmp(key, SW_LABEL_END_TIMESTAMP) == 0)
				printf(" %u=ts", l->key);
			else if (l->is_num)
				printf(" %u=%lld/%u", l->key, (long long)l->num, l->num_unit);
			else
				printf(" %u=s%u", l->key, l->str);
		}
		printf(" values");
		for (int s = 0; s < SW_V_COUNT; s++)
			printf(" %lld", (long long)v.values[s]);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	for (int t = 0; t < THREADS; t++) {
		snprintf(names[t], sizeof(names[t]), "worker-%d", t);
		for (int s = 0; s < STACKS_PER_THREAD; s++)
			for (int d = 0; d < DEPTH; d++)
				stacks[t][s][d] = 0x400000u + 0x1000u * (uint64_t)(t * 7 + s) + 16u * (uint64_t)d;
	}
	bool dumping = argc > 2 && strcmp(argv[2], "dump") == 0;
	struct profile_limits lim = {
		.max_string_bytes = argc > 3 ? (uint32_t)atol(argv[3]) : 0,
		.max_samples = 65536,
		.timeline_slots = sw_kind_value_mask(SW_KIND_CPU) | sw_kind_value_mask(SW_KIND_WALL),
		.max_timeline_samples = 32768,
	};
	struct recorder *rec = recorder_create(&lim);
	if (!rec)
		return 1;
	unsigned failed = record_rounds(rec, 0, rounds);
	struct profile *p = recorder_swap(rec);
	if (!p)
		return 1;
	struct profile_stats st;
	profile_get_stats(p, &st);
	printf("adds %ld failed %u samples %u stacks %u strings %u timeline %u\n",
	       rounds * THREADS * 2, failed, st.samples, st.stacks, st.strings, st.timeline_samples);
	if (dumping)
		dump(p);
	profile_release(p);
	recorder_destroy(rec);
	return failed != 0 && !dumping;
}
