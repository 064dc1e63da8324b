/* Pyroscope's view of a recorded profile; see pyroscope.h. */
#include "encode/pyroscope.h"

#include "rt/rt.h"
#include "rt/sys.h"

#define KEY_CAP 128
#define VALUE_CAP 2049 /* validation.max-length-label-value is 2048 */
#define TRIM_ROUNDS 8

/* One Pyroscope profile made from a kind's slots. */
struct pyro_part {
	const char *series;
	const char *config;        /* sample_type_config JSON, or NULL */
	enum sw_value_slot slots[2];
	uint32_t n_slots;
	const char *types[2];
	const char *units[2];
};

/* Go's convention for locks: block = time waiting, at the waiter's stack;
 * mutex = contention charged to the holder, at the unlock.  Both use
 * contentions/delay; the server's default mapping files those as mutex, so
 * the block profile names itself with a sample_type_config. */
#define BLOCK_CONFIG                                                                            \
	"{\"contentions\":{\"units\":\"lock_samples\",\"display-name\":\"block_count\","          \
	"\"cumulative\":true},\"delay\":{\"units\":\"lock_nanoseconds\","                         \
	"\"display-name\":\"block_duration\",\"cumulative\":true}}"

static const struct {
	enum sw_kind kind;
	struct pyro_part part;
} part_table[] = {
	{SW_KIND_CPU, {"process_cpu", NULL, {SW_V_CPU_SAMPLES, SW_V_CPU_TIME}, 2,
		       {"samples", "cpu"}, {"count", "nanoseconds"}}},
	{SW_KIND_WALL, {"wall", NULL, {SW_V_WALL_SAMPLES, SW_V_WALL_TIME}, 2,
			{"samples", "wall"}, {"count", "nanoseconds"}}},
	{SW_KIND_ALLOC, {"memory", NULL, {SW_V_ALLOC_SAMPLES, SW_V_ALLOC_SPACE}, 2,
			 {"alloc_objects", "alloc_space"}, {"count", "bytes"}}},
	{SW_KIND_HEAP, {"memory", NULL, {SW_V_HEAP_LIVE_SAMPLES, SW_V_HEAP_LIVE_SIZE}, 2,
			{"inuse_objects", "inuse_space"}, {"count", "bytes"}}},
	{SW_KIND_LOCK, {"block", BLOCK_CONFIG, {SW_V_LOCK_ACQUIRE, SW_V_LOCK_ACQUIRE_WAIT}, 2,
			{"contentions", "delay"}, {"count", "nanoseconds"}}},
	{SW_KIND_LOCK, {"mutex", NULL, {SW_V_LOCK_RELEASE, SW_V_LOCK_RELEASE_HOLD}, 2,
			{"contentions", "delay"}, {"count", "nanoseconds"}}},
	{SW_KIND_EXCEPTION, {"exceptions", NULL, {SW_V_EXCEPTION_SAMPLES}, 1,
			     {"exceptions"}, {"count"}}},
};

static uint32_t parts_of(enum sw_kind kind, struct pyro_part parts[PYRO_MAX_OUTPUTS])
{
	uint32_t n = 0;
	for (size_t i = 0; i < RT_ARRAY_LEN(part_table) && n < PYRO_MAX_OUTPUTS; i++)
		if (part_table[i].kind == kind)
			parts[n++] = part_table[i].part;
	return n;
}

static bool name_byte_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

size_t pyro_label_name(const char *key, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	if (cap == 0)
		return 0;
	if (n > 0 && key[0] >= '0' && key[0] <= '9' && o + 1 < cap)
		out[o++] = '_';
	else if (n >= 2 && key[0] == '_' && key[1] == '_' && o + 1 < cap)
		out[o++] = 'x';
	for (size_t i = 0; i < n && o + 1 < cap; i++)
		out[o++] = name_byte_ok(key[i]) ? key[i] : '_';
	out[o] = '\0';
	return o;
}

size_t pyro_service_name(const char *name, char *out, size_t cap)
{
	if (cap == 0)
		return 0;
	size_t o = 0;
	for (const char *s = name; *s && o + 1 < cap; s++) {
		char c = *s;
		bool ok = name_byte_ok(c) || c == '.' || c == '-' || c == '/';
		out[o++] = ok ? c : '_';
	}
	if (o == 0)
		o = rt_strlcpy(out, "unknown_service", cap);
	out[o < cap ? o : cap - 1] = '\0';
	return o < cap ? o : cap - 1;
}

/* Length of the longest valid UTF-8 prefix of s[0..n), at most max bytes. */
static size_t utf8_prefix(const uint8_t *s, size_t n, size_t max, bool *valid)
{
	size_t i = 0;
	*valid = true;
	while (i < n) {
		uint8_t c = s[i];
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		bool ok = len != 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = (s[i + k] & 0xc0) == 0x80;
		if (ok && len == 2 && c < 0xc2)
			ok = false; /* overlong */
		if (!ok) {
			*valid = false;
			return i;
		}
		if (i + len > max)
			return i;
		i += len;
	}
	return i;
}

/* A label value as valid UTF-8 of at most 2048 bytes: invalid bytes become '?'. */
static void copy_value(const char *s, size_t n, char out[VALUE_CAP])
{
	size_t o = 0;
	const uint8_t *u = (const uint8_t *)s;
	for (size_t guard = 0; n > 0 && o + 1 < VALUE_CAP && guard < VALUE_CAP; guard++) {
		bool valid;
		size_t good = utf8_prefix(u, n, VALUE_CAP - 1 - o, &valid);
		rt_memcpy(out + o, u, good);
		o += good;
		u += good;
		n -= good;
		if (valid || n == 0 || o + 1 >= VALUE_CAP)
			break;
		out[o++] = '?';
		u++;
		n--;
	}
	out[o] = '\0';
}

struct scratch {
	char keys[SW_MAX_LABELS][KEY_CAP];
	char values[SW_MAX_LABELS][VALUE_CAP];
	struct sw_label labels[SW_MAX_LABELS];
};

/* Pyroscope's labels of one sample into sc->labels; returns how many. */
static uint32_t convert_labels(const struct profile *p, const struct profile_sample_view *v,
			       const struct pyro_limits *lim, struct scratch *sc)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < v->n_labels && n < lim->max_sample_labels && n < SW_MAX_LABELS;
	     i++) {
		const struct profile_label *l = &v->labels[i];
		uint32_t klen = 0, slen = 0;
		const char *key = profile_string(p, l->key, &klen);
		if (!key || klen == 0)
			continue;
		char *k = sc->keys[n], *val = sc->values[n];
		if (l->is_num) {
			if (rt_strcmp(key, SW_LABEL_LOCAL_ROOT_SPAN_ID) == 0 && l->num != 0) {
				rt_strlcpy(k, "span_id", KEY_CAP);
				rt_snprintf(val, VALUE_CAP, "%016llx", (unsigned long long)l->num);
			} else if (lim->thread_ids && rt_strcmp(key, SW_LABEL_THREAD_ID) == 0) {
				rt_strlcpy(k, "thread_id", KEY_CAP);
				rt_snprintf(val, VALUE_CAP, "%lld", (long long)l->num);
			} else {
				continue; /* the server drops number labels */
			}
		} else {
			const char *str = profile_string(p, l->str, &slen);
			if (!str || slen == 0)
				continue;
			if (rt_strcmp(key, SW_LABEL_TRACE_ENDPOINT) == 0)
				rt_strlcpy(k, "span_name", KEY_CAP);
			else if (pyro_label_name(key, klen, k, KEY_CAP) == 0)
				continue;
			copy_value(str, slen, val);
			if (!val[0])
				continue;
		}
		bool dup = false;
		for (uint32_t j = 0; j < n && !dup; j++)
			dup = rt_strcmp(sc->keys[j], k) == 0;
		if (dup)
			continue;
		sc->labels[n] = (struct sw_label){.key = k, .str = val};
		n++;
	}
	return n;
}

static uint32_t slot_mask_of(const struct pyro_part *part)
{
	uint32_t m = 0;
	for (uint32_t i = 0; i < part->n_slots; i++)
		m |= SW_V_BIT(part->slots[i]);
	return m;
}

/* Copies the part's samples with Pyroscope's labels into a new profile
 * (identical results merge there). */
static struct profile *convert(const struct profile *p, const struct pyro_part *part,
			       const struct pyro_limits *lim, struct scratch *sc)
{
	struct profile_stats st;
	profile_get_stats(p, &st);
	struct profile_limits pl = {.max_samples = profile_sample_count(p) + 2};
	struct profile *d = profile_create(&pl);
	if (!d)
		return NULL;
	profile_set_times(d, st.start_ns, st.end_ns);
	uint32_t n = profile_sample_count(p);
	struct profile_sample_view v;
	for (uint32_t i = 0; i < n; i++) {
		if (!profile_sample_get(p, i, &v))
			break;
		struct sw_value vals[2];
		uint32_t nv = 0;
		for (uint32_t k = 0; k < part->n_slots; k++)
			if (v.values[part->slots[k]])
				vals[nv++] = (struct sw_value){part->slots[k], v.values[part->slots[k]]};
		if (!nv)
			continue;
		uint32_t nl = convert_labels(p, &v, lim, sc);
		struct sw_sample s = {v.pcs, v.depth, vals, nv, sc->labels, nl};
		(void)profile_add(d, &s);
	}
	return d;
}

/* A sample of the merged profile and what it weighs (its main value). */
struct ranked {
	int64_t weight;
	uint32_t index;
};

static bool heavier(const void *a, const void *b)
{
	return ((const struct ranked *)a)->weight > ((const struct ranked *)b)->weight;
}

/* The `keep` heaviest samples of d as they are, the others merged into one
 * "[trimmed]" sample without labels. */
static struct profile *trim(const struct profile *d, const struct pyro_part *part,
			    const struct ranked *order, uint32_t keep, struct scratch *sc)
{
	struct profile_stats st;
	profile_get_stats(d, &st);
	struct profile_limits pl = {.max_samples = keep + 2};
	struct profile *t = profile_create(&pl);
	if (!t)
		return NULL;
	profile_set_times(t, st.start_ns, st.end_ns);
	uint32_t n = profile_sample_count(d);
	static const uint64_t trimmed_pc[1] = {SW_PC_TRIMMED};
	struct profile_sample_view v;
	for (uint32_t r = 0; r < n; r++) {
		if (!profile_sample_get(d, order[r].index, &v))
			break;
		struct sw_value vals[2];
		uint32_t nv = 0;
		for (uint32_t k = 0; k < part->n_slots; k++)
			if (v.values[part->slots[k]])
				vals[nv++] = (struct sw_value){part->slots[k], v.values[part->slots[k]]};
		struct sw_sample s = {trimmed_pc, 1, vals, nv, NULL, 0};
		if (r < keep) {
			uint32_t nl = 0;
			for (uint32_t i = 0; i < v.n_labels && nl < SW_MAX_LABELS; i++) {
				uint32_t len;
				const char *k = profile_string(d, v.labels[i].key, &len);
				const char *val = profile_string(d, v.labels[i].str, &len);
				if (k && val)
					sc->labels[nl++] = (struct sw_label){.key = k, .str = val};
			}
			s = (struct sw_sample){v.pcs, v.depth, vals, nv, sc->labels, nl};
		}
		(void)profile_add(t, &s);
	}
	return t;
}

static int encode_part(const struct profile *p, const struct pyro_part *part,
		       const struct pprof_opts *o, const struct pyro_limits *lim,
		       sw_resolve_fn resolve, void *ctx, struct scratch *sc,
		       struct pyro_output *out)
{
	const char *types[SW_V_COUNT] = {0}, *units[SW_V_COUNT] = {0};
	for (uint32_t k = 0; k < part->n_slots; k++) {
		types[part->slots[k]] = part->types[k];
		units[part->slots[k]] = part->units[k];
	}
	struct pprof_opts po = *o;
	po.type_names = types;
	po.unit_names = units;
	po.period_slot = (int)part->slots[part->n_slots - 1];
	po.default_slot = po.period_slot;

	struct profile *d = convert(p, part, lim, sc);
	if (!d)
		return -ENOMEM;
	uint32_t n = profile_sample_count(d);
	if (n == 0) {
		profile_release(d);
		return 0;
	}
	uint32_t mask = slot_mask_of(part);
	struct ranked *order = NULL;
	uint32_t keep = n;
	int rc = -EMSGSIZE;
	for (int round = 0; round < TRIM_ROUNDS; round++) {
		if (round == 0 && n > lim->max_samples)
			keep = lim->max_samples - 1;
		struct profile *t = d;
		if (keep < n) {
			if (!order) {
				order = rt_malloc(n * sizeof(*order));
				if (!order) {
					rc = -ENOMEM;
					break;
				}
				struct profile_sample_view v;
				enum sw_value_slot main = part->slots[part->n_slots - 1];
				for (uint32_t i = 0; i < n; i++) {
					order[i].index = i;
					order[i].weight = profile_sample_get(d, i, &v) ? v.values[main] : 0;
				}
				rt_sort(order, n, sizeof(*order), heavier);
			}
			t = trim(d, part, order, keep, sc);
			if (!t) {
				rc = -ENOMEM;
				break;
			}
		}
		rt_buf_reset(&out->raw);
		rc = pprof_encode(t, mask, &po, resolve, ctx, &out->raw);
		out->samples = profile_sample_count(t);
		if (t != d)
			profile_release(t);
		if (rc < 0)
			break;
		if (out->raw.len <= lim->max_bytes) {
			out->trimmed = n - (keep < n ? keep : n);
			rc = 1;
			break;
		}
		rc = -EMSGSIZE;
		keep = (keep < n ? keep : n) / 2;
		if (keep < 1)
			break;
	}
	rt_free(order);
	profile_release(d);
	if (rc == 1 && out->trimmed)
		rt_log_once(RT_LOG_WARN,
			    "pyroscope: a %s profile had %u samples, over the server's limits (%u "
			    "samples, %u bytes): the %u smallest were merged into [trimmed]",
			    part->series, n, lim->max_samples, lim->max_bytes, out->trimmed);
	return rc;
}

int pyro_encode_kind(const struct profile *p, enum sw_kind kind, const struct pprof_opts *o,
		     const struct pyro_limits *lim, sw_resolve_fn resolve, void *resolve_ctx,
		     struct pyro_output out[PYRO_MAX_OUTPUTS])
{
	struct pyro_part parts[PYRO_MAX_OUTPUTS];
	uint32_t n_parts = parts_of(kind, parts);
	if (!p || !o || !lim || lim->max_samples < 2)
		return -EINVAL;
	struct scratch *sc = rt_malloc(sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	int n_out = 0;
	int result = 0;
	for (uint32_t i = 0; i < n_parts; i++) {
		struct pyro_output *po = &out[n_out];
		rt_memset(po, 0, sizeof(*po));
		int r = encode_part(p, &parts[i], o, lim, resolve, resolve_ctx, sc, po);
		if (r == 1) {
			po->series = parts[i].series;
			po->sample_type_config = parts[i].config;
			n_out++;
		} else {
			rt_buf_free(&po->raw);
			if (r < 0)
				result = r;
		}
	}
	rt_free(sc);
	return n_out > 0 ? n_out : result;
}
