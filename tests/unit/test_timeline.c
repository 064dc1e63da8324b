/* Timeline (end_timestamp_ns labels in the recorder) and Pyroscope's view of
 * a profile (encode/pyroscope.h): names, merging, trimming, empty kinds. */
#define _GNU_SOURCE
#include <string.h>
#include <time.h>

#include "check.h"
#include "encode/pyroscope.h"
#include "profile/profile.h"

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const uint64_t stack_a[3] = {0x401000, 0x402000, 0x403000};

static void add_cpu(struct profile *p, const uint64_t *pcs, uint32_t depth, int64_t ns,
		    const struct sw_label *labels, uint32_t n_labels)
{
	struct sw_value v[2] = {{SW_V_CPU_SAMPLES, 1}, {SW_V_CPU_TIME, ns}};
	struct sw_sample s = {pcs, depth, v, 2, labels, n_labels};
	CHECK(profile_add(p, &s) == PROFILE_ADD_OK);
}

static int64_t ts_of(const struct profile *p, const struct profile_sample_view *v)
{
	for (uint32_t i = 0; i < v->n_labels; i++) {
		uint32_t len;
		const char *k = profile_string(p, v->labels[i].key, &len);
		if (v->labels[i].is_num && strcmp(k, SW_LABEL_END_TIMESTAMP) == 0)
			return v->labels[i].num;
	}
	return -1;
}

static void test_timestamps_and_budget(void)
{
	struct profile_limits lim = {
		.timeline_slots = SW_V_BIT(SW_V_CPU_SAMPLES) | SW_V_BIT(SW_V_CPU_TIME),
		.max_timeline_samples = 1000,
	};
	struct profile *p = profile_create(&lim);
	struct profile_limits off = {0};
	struct profile *q = profile_create(&off);
	CHECK(p && q);
	uint64_t t0 = realtime_ns();
	struct sw_label name = {.key = SW_LABEL_THREAD_NAME, .str = "worker"};
	for (int i = 0; i < 3000; i++) {
		add_cpu(p, stack_a, 3, 10000000, &name, 1);
		add_cpu(q, stack_a, 3, 10000000, &name, 1);
	}
	/* Alloc samples never get a timestamp. */
	struct sw_value av[1] = {{SW_V_ALLOC_SPACE, 64}};
	struct sw_sample as = {stack_a, 3, av, 1, NULL, 0};
	CHECK(profile_add(p, &as) == PROFILE_ADD_OK);
	uint64_t t1 = realtime_ns();
	struct profile_stats sp, sq;
	profile_get_stats(p, &sp);
	profile_get_stats(q, &sq);
	CHECK_EQ_U64(sp.timeline_samples, 1000);
	CHECK_EQ_U64(sp.timeline_dropped, 2000);
	CHECK_EQ_U64(sq.samples, 1);
	/* 1000 timestamped (most distinct), one without, one alloc sample. */
	CHECK(sp.samples >= 3 && sp.samples <= 1002);
	uint32_t stamped = 0;
	int64_t cpu_total = 0;
	struct profile_sample_view v;
	for (uint32_t i = 0; i < profile_sample_count(p); i++) {
		CHECK(profile_sample_get(p, i, &v));
		cpu_total += v.values[SW_V_CPU_TIME];
		int64_t ts = ts_of(p, &v);
		if (ts >= 0) {
			stamped++;
			CHECK((uint64_t)ts >= sp.start_ns && (uint64_t)ts >= t0 && (uint64_t)ts <= t1);
		}
		if (v.values[SW_V_ALLOC_SPACE])
			CHECK(ts < 0);
	}
	CHECK(stamped == sp.samples - 2);
	CHECK(cpu_total == 3000ll * 10000000ll);
	profile_release(p);
	profile_release(q);
}

/* What the timeline costs: the recorder memory of N timestamped samples of
 * one stack against the same N aggregated into one sample. */
static void test_timeline_memory_cost(void)
{
	enum { N = 32768 };
	struct profile_limits lim = {
		.timeline_slots = SW_V_BIT(SW_V_CPU_SAMPLES) | SW_V_BIT(SW_V_CPU_TIME),
		.max_timeline_samples = N,
	};
	struct profile *p = profile_create(&lim);
	struct profile *q = profile_create(NULL);
	CHECK(p && q);
	struct sw_label l[2] = {{.key = SW_LABEL_THREAD_NAME, .str = "worker"},
				{.key = SW_LABEL_THREAD_ID, .num = 42}};
	for (int i = 0; i < N; i++) {
		add_cpu(p, stack_a, 3, 10000000, l, 2);
		add_cpu(q, stack_a, 3, 10000000, l, 2);
	}
	struct profile_stats sp, sq;
	profile_get_stats(p, &sp);
	profile_get_stats(q, &sq);
	double per = (double)(sp.memory_bytes - sq.memory_bytes) / (double)sp.timeline_samples;
	printf("  timeline: %u timestamped samples hold %.2f MiB more than one aggregated sample "
	       "(%.0f bytes each)\n",
	       sp.timeline_samples, (double)(sp.memory_bytes - sq.memory_bytes) / 1048576.0, per);
	CHECK(sp.timeline_samples >= N - 8);
	CHECK(per > 16 && per < 512);
	profile_release(p);
	profile_release(q);
}

struct parsed {
	char types[4][32];
	int n_types;
	uint32_t samples;
};

/* A just-enough walk of the encoded sample types and sample count. */
static uint64_t rd_varint(const uint8_t *b, size_t n, size_t *i)
{
	uint64_t r = 0;
	for (int shift = 0; *i < n && shift < 64; shift += 7) {
		uint8_t c = b[(*i)++];
		r |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			break;
	}
	return r;
}

static void parse(const struct rt_buf *raw, struct parsed *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t type_idx[4] = {0};
	const char *strings[4096];
	size_t lens[4096];
	size_t n_strings = 0, i = 0;
	while (i < raw->len) {
		uint64_t key = rd_varint(raw->data, raw->len, &i);
		uint64_t len = (key & 7) == 2 ? rd_varint(raw->data, raw->len, &i) : 0;
		if ((key & 7) == 0) {
			(void)rd_varint(raw->data, raw->len, &i);
			continue;
		}
		const uint8_t *at = raw->data + i;
		if ((key >> 3) == 1 && out->n_types < 4) {
			size_t j = 0;
			if (j < len && at[j] == 0x08) {
				j++;
				type_idx[out->n_types++] = rd_varint(at, len, &j);
			}
		} else if ((key >> 3) == 2) {
			out->samples++;
		} else if ((key >> 3) == 6 && n_strings < 4096) {
			strings[n_strings] = (const char *)at;
			lens[n_strings++] = len;
		}
		i += len;
	}
	for (int t = 0; t < out->n_types; t++)
		if (type_idx[t] < n_strings && lens[type_idx[t]] < 32)
			memcpy(out->types[t], strings[type_idx[t]], lens[type_idx[t]]);
}

static void test_pyroscope_names_merge_trim(void)
{
	struct profile *p = profile_create(NULL);
	CHECK(p != NULL);
	uint64_t pcs[64][2];
	/* 60 distinct stacks of falling weight, each on two threads (a number
	 * label Pyroscope drops, so the pairs merge) with a spaced label key. */
	for (int i = 0; i < 60; i++) {
		pcs[i][0] = 0x500000 + (uint64_t)i * 16;
		pcs[i][1] = 0x600000;
		for (int t = 0; t < 2; t++) {
			struct sw_label l[3] = {
				{.key = SW_LABEL_THREAD_ID, .num = 100 + t},
				{.key = SW_LABEL_THREAD_NAME, .str = "w"},
				{.key = SW_LABEL_LOCAL_ROOT_SPAN_ID, .num = 0xabc},
			};
			add_cpu(p, pcs[i], 2, (int64_t)(60 - i) * 1000, l, 3);
		}
	}
	struct pprof_opts o;
	pprof_opts_for_kind(&o, SW_KIND_CPU, 10000000);
	struct pyro_limits lim = {.max_samples = 16000, .max_bytes = 4u << 20,
				  .max_sample_labels = 20};
	struct pyro_output out[PYRO_MAX_OUTPUTS];
	CHECK(pyro_encode_kind(p, SW_KIND_CPU, &o, &lim, NULL, NULL, out) == 1);
	struct parsed ps;
	parse(&out[0].raw, &ps);
	CHECK(strcmp(out[0].series, "process_cpu") == 0);
	CHECK(ps.n_types == 2 && strcmp(ps.types[0], "samples") == 0 &&
	      strcmp(ps.types[1], "cpu") == 0);
	CHECK_EQ_U64(ps.samples, 60); /* the thread pairs merged */
	CHECK(memmem(out[0].raw.data, out[0].raw.len, "thread_name", 11) != NULL);
	CHECK(memmem(out[0].raw.data, out[0].raw.len, "0000000000000abc", 16) != NULL);
	CHECK(memmem(out[0].raw.data, out[0].raw.len, "thread id", 9) == NULL);
	rt_buf_free(&out[0].raw);

	/* Over 10 samples: 9 kept, 51 merged into [trimmed]. */
	lim.max_samples = 10;
	CHECK(pyro_encode_kind(p, SW_KIND_CPU, &o, &lim, NULL, NULL, out) == 1);
	parse(&out[0].raw, &ps);
	CHECK_EQ_U64(ps.samples, 10);
	CHECK_EQ_U64(out[0].trimmed, 51);
	CHECK(memmem(out[0].raw.data, out[0].raw.len, "[trimmed]", 9) != NULL);
	rt_buf_free(&out[0].raw);

	/* Over the byte limit: trimmed further until it fits. */
	lim.max_samples = 16000;
	CHECK(pyro_encode_kind(p, SW_KIND_CPU, &o, &lim, NULL, NULL, out) == 1);
	size_t full = out[0].raw.len;
	rt_buf_free(&out[0].raw);
	lim.max_bytes = (uint32_t)(full * 2 / 3);
	CHECK(pyro_encode_kind(p, SW_KIND_CPU, &o, &lim, NULL, NULL, out) == 1);
	CHECK(out[0].raw.len <= lim.max_bytes && out[0].trimmed > 0);
	rt_buf_free(&out[0].raw);

	/* A kind without samples gives nothing. */
	CHECK(pyro_encode_kind(p, SW_KIND_WALL, &o, &lim, NULL, NULL, out) == 0);
	profile_release(p);
}

static void test_pyroscope_label_names(void)
{
	char b[64];
	CHECK(pyro_label_name("thread name", 11, b, sizeof(b)) == 11 && strcmp(b, "thread_name") == 0);
	CHECK(pyro_label_name("team.name", 9, b, sizeof(b)) && strcmp(b, "team_name") == 0);
	CHECK(pyro_label_name("9lives", 6, b, sizeof(b)) && strcmp(b, "_9lives") == 0);
	CHECK(pyro_label_name("__name__", 8, b, sizeof(b)) && strcmp(b, "x__name__") == 0);
	CHECK(pyro_label_name("caf\xc3\xa9", 5, b, sizeof(b)) && strcmp(b, "caf__") == 0);
	CHECK(pyro_label_name("", 0, b, sizeof(b)) == 0);
	CHECK(pyro_label_name("abcdefgh", 8, b, 4) == 3 && strcmp(b, "abc") == 0);
	CHECK(pyro_service_name("shop api:v2", b, sizeof(b)) && strcmp(b, "shop_api_v2") == 0);
	CHECK(pyro_service_name("a-b.c/d_e", b, sizeof(b)) && strcmp(b, "a-b.c/d_e") == 0);
	CHECK(pyro_service_name("", b, sizeof(b)) && strcmp(b, "unknown_service") == 0);
}

int main(void)
{
	RUN(test_timestamps_and_budget);
	RUN(test_timeline_memory_cost);
	RUN(test_pyroscope_names_merge_trim);
	RUN(test_pyroscope_label_names);
	return CHECK_DONE();
}
