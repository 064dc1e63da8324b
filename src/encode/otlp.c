/* pprof -> OTLP profiles translation (see otlp.h). */
#include "encode/otlp.h"
#include "encode/pb.h"
#include "profile/htab.h"

#include <linux/errno.h>

/* pprof (perftools.profiles) field numbers, as encode/pprof.c writes them. */
enum {
	PP_SAMPLE_TYPE = 1, PP_SAMPLE = 2, PP_MAPPING = 3, PP_LOCATION = 4, PP_FUNCTION = 5,
	PP_STRING_TABLE = 6, PP_TIME_NANOS = 9, PP_DURATION_NANOS = 10, PP_PERIOD_TYPE = 11,
	PP_PERIOD = 12,
};
enum { PP_VT_TYPE = 1, PP_VT_UNIT = 2 };
enum { PP_SAMPLE_LOCATION = 1, PP_SAMPLE_VALUE = 2, PP_SAMPLE_LABEL = 3 };
enum { PP_LABEL_KEY = 1, PP_LABEL_STR = 2, PP_LABEL_NUM = 3, PP_LABEL_NUM_UNIT = 4 };
enum { PP_MAP_ID = 1, PP_MAP_START = 2, PP_MAP_LIMIT = 3, PP_MAP_OFFSET = 4, PP_MAP_FILE = 5,
       PP_MAP_BUILD_ID = 6 };
enum { PP_LOC_ID = 1, PP_LOC_MAPPING = 2, PP_LOC_ADDRESS = 3, PP_LOC_LINE = 4 };
enum { PP_LINE_FUNCTION = 1, PP_LINE_LINE = 2 };
enum { PP_FN_ID = 1, PP_FN_NAME = 2, PP_FN_SYSTEM_NAME = 3, PP_FN_FILE = 4, PP_FN_START_LINE = 5 };

/* OTLP field numbers (opentelemetry-proto v1.11.0). */
enum { REQ_RESOURCE_PROFILES = 1, REQ_DICTIONARY = 2 };
enum { RP_RESOURCE = 1, RP_SCOPE_PROFILES = 2 };
enum { RES_ATTRIBUTES = 1 };
enum { KV_KEY = 1, KV_VALUE = 2 };
enum { ANY_STRING = 1, ANY_INT = 3 };
enum { SP_SCOPE = 1, SP_PROFILES = 2 };
enum { SCOPE_NAME = 1, SCOPE_VERSION = 2 };
enum { PR_SAMPLE_TYPE = 1, PR_SAMPLES = 2, PR_TIME = 3, PR_DURATION = 4, PR_PERIOD_TYPE = 5,
       PR_PERIOD = 6, PR_PROFILE_ID = 7 };
enum { VT_TYPE = 1, VT_UNIT = 2 };
enum { SA_STACK = 1, SA_ATTRIBUTES = 2, SA_LINK = 3, SA_VALUES = 4 };
enum { DI_MAPPING = 1, DI_LOCATION = 2, DI_FUNCTION = 3, DI_LINK = 4, DI_STRING = 5,
       DI_ATTRIBUTE = 6, DI_STACK = 7 };
enum { MA_START = 1, MA_LIMIT = 2, MA_OFFSET = 3, MA_FILENAME = 4, MA_ATTRIBUTES = 5 };
enum { ST_LOCATIONS = 1 };
enum { LO_MAPPING = 1, LO_ADDRESS = 2, LO_LINES = 3 };
enum { LI_FUNCTION = 1, LI_LINE = 2 };
enum { FN_NAME = 1, FN_SYSTEM_NAME = 2, FN_FILENAME = 3, FN_START_LINE = 4 };
enum { KVU_KEY = 1, KVU_VALUE = 2, KVU_UNIT = 3 };
enum { LINK_TRACE_ID = 1, LINK_SPAN_ID = 2 };

#define BUILD_ID_KEY "process.executable.build_id.gnu"

/* A dictionary table: distinct byte strings (a string's bytes, or an
 * encoded message), each stored once; index 0 is the empty value. */
struct blob_table {
	struct rt_buf bytes;
	uint32_t *off, *len;
	uint32_t n, cap;
	struct sw_htab index;
};

struct blob_key {
	const struct blob_table *t;
	const uint8_t *p;
	uint32_t n;
};

/* Entry idx's bytes (the table's storage is NULL while every entry is empty). */
static const uint8_t *blob_at(const struct blob_table *t, uint32_t idx)
{
	return t->bytes.data ? t->bytes.data + t->off[idx] : (const uint8_t *)"";
}

static bool blob_eq(const void *ctx, uint32_t idx)
{
	const struct blob_key *k = ctx;
	return k->t->len[idx] == k->n && rt_memcmp(blob_at(k->t, idx), k->p, k->n) == 0;
}

struct otlp_encoder {
	struct blob_table strings, mappings, locations, functions, links, attributes, stacks;
	struct rt_buf *profiles; /* each an encoded Profile body */
	uint32_t n_profiles, cap_profiles;
	bool failed;
};

/* Index of the bytes in t, adding them; 0 (and e->failed) on failure. */
static uint32_t intern(struct otlp_encoder *e, struct blob_table *t, const void *p, size_t n)
{
	if (n > UINT32_MAX / 2 || e->failed) {
		e->failed = true;
		return 0;
	}
	uint32_t hash = rt_hash_fold(rt_hash_bytes(RT_HASH_SEED, p, n));
	struct blob_key k = { t, p, (uint32_t)n };
	uint32_t idx = sw_htab_lookup(&t->index, hash, blob_eq, &k);
	if (idx != SW_HTAB_NONE)
		return idx;
	void *off = t->off, *len = t->len;
	uint32_t cap = t->cap, cap2 = t->cap;
	if (!sw_array_reserve(&off, &cap, t->n + 1, sizeof(uint32_t)) ||
	    !sw_array_reserve(&len, &cap2, t->n + 1, sizeof(uint32_t))) {
		t->off = off;
		t->len = len;
		e->failed = true;
		return 0;
	}
	t->off = off;
	t->len = len;
	t->cap = cap < cap2 ? cap : cap2;
	if (t->bytes.len > UINT32_MAX / 2 || !sw_htab_insert(&t->index, hash, t->n)) {
		e->failed = true;
		return 0;
	}
	t->off[t->n] = (uint32_t)t->bytes.len;
	t->len[t->n] = (uint32_t)n;
	rt_buf_append(&t->bytes, p, n);
	if (t->bytes.failed) {
		e->failed = true;
		return 0;
	}
	return t->n++;
}

static void blob_free(struct blob_table *t)
{
	rt_buf_free(&t->bytes);
	rt_free(t->off);
	rt_free(t->len);
	sw_htab_free(&t->index);
}

struct otlp_encoder *otlp_encoder_create(void)
{
	struct otlp_encoder *e = rt_calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	/* Index 0 of every table: "" and the zero-valued messages; the null
	 * link has ids of the full lengths, as the format recommends. */
	static const uint8_t null_link[] = { 0x0a, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					     0x12, 8, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct blob_table *empty_first[] = { &e->strings, &e->mappings, &e->locations, &e->functions,
					     &e->attributes, &e->stacks };
	for (size_t i = 0; i < sizeof(empty_first) / sizeof(empty_first[0]); i++)
		(void)intern(e, empty_first[i], "", 0);
	(void)intern(e, &e->links, null_link, sizeof(null_link));
	if (e->failed) {
		otlp_encoder_destroy(e);
		return NULL;
	}
	return e;
}

void otlp_encoder_destroy(struct otlp_encoder *e)
{
	if (!e)
		return;
	struct blob_table *all[] = { &e->strings, &e->mappings, &e->locations, &e->functions,
				     &e->links, &e->attributes, &e->stacks };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		blob_free(all[i]);
	for (uint32_t i = 0; i < e->n_profiles; i++)
		rt_buf_free(&e->profiles[i]);
	rt_free(e->profiles);
	rt_free(e);
}

uint32_t otlp_profile_count(const struct otlp_encoder *e) { return e->n_profiles; }

/* ---- one pprof ---- */

struct slice {
	const uint8_t *p;
	uint32_t n;
};

/* A growable array of slices. */
struct slices {
	struct slice *v;
	uint32_t n, cap;
};

static bool slices_push(struct slices *s, const uint8_t *p, size_t n)
{
	void *arr = s->v;
	if (n > UINT32_MAX || !sw_array_reserve(&arr, &s->cap, s->n + 1, sizeof(*s->v)))
		return false;
	s->v = arr;
	s->v[s->n++] = (struct slice){ p, (uint32_t)n };
	return true;
}

struct pprof_view {
	struct slices strings, sample_types, samples, mappings, locations, functions;
	struct slice period_type;
	uint64_t time_nanos, duration_nanos;
	int64_t period;
	uint32_t *gstr;  /* local string index -> dictionary index */
	uint32_t *gmap;  /* mapping id - 1 -> dictionary index */
	uint32_t *gfn;   /* function id - 1 -> dictionary index */
	uint32_t *gloc;  /* location id - 1 -> dictionary index */
	uint32_t span_key, trace_key; /* local string indices of the link labels (0: absent) */
	uint32_t thread_id_key, thread_name_key;
};

static void view_free(struct pprof_view *v)
{
	rt_free(v->strings.v);
	rt_free(v->sample_types.v);
	rt_free(v->samples.v);
	rt_free(v->mappings.v);
	rt_free(v->locations.v);
	rt_free(v->functions.v);
	rt_free(v->gstr);
	rt_free(v->gmap);
	rt_free(v->gfn);
	rt_free(v->gloc);
}

static bool read_top(struct pb_in *r, struct pprof_view *v)
{
	uint32_t field;
	enum pb_wire wire;
	while (!pb_in_done(r)) {
		if (!pb_in_key(r, &field, &wire))
			return false;
		struct pb_in sub;
		uint64_t x;
		struct slices *list = NULL;
		switch (field) {
		case PP_SAMPLE_TYPE: list = &v->sample_types; break;
		case PP_SAMPLE: list = &v->samples; break;
		case PP_MAPPING: list = &v->mappings; break;
		case PP_LOCATION: list = &v->locations; break;
		case PP_FUNCTION: list = &v->functions; break;
		case PP_STRING_TABLE: list = &v->strings; break;
		default: break;
		}
		if (list || field == PP_PERIOD_TYPE) {
			if (wire != PB_WIRE_LEN || !pb_in_len(r, &sub))
				return false;
			if (list && !slices_push(list, sub.p, (size_t)(sub.end - sub.p)))
				return false;
			if (!list)
				v->period_type = (struct slice){ sub.p, (uint32_t)(sub.end - sub.p) };
		} else if ((field == PP_TIME_NANOS || field == PP_DURATION_NANOS || field == PP_PERIOD) &&
			   wire == PB_WIRE_VARINT) {
			if (!pb_in_varint(r, &x))
				return false;
			if (field == PP_TIME_NANOS)
				v->time_nanos = x;
			else if (field == PP_DURATION_NANOS)
				v->duration_nanos = x;
			else
				v->period = (int64_t)x;
		} else if (!pb_in_skip(r, wire)) {
			return false;
		}
	}
	return true;
}

/* Each varint field of a message by number (the last one wins); fields
 * above max are ignored; LEN fields are skipped. */
static bool read_scalars(struct slice m, uint64_t *vals, uint32_t max)
{
	struct pb_in r = { m.p, m.p + m.n };
	uint32_t field;
	enum pb_wire wire;
	while (!pb_in_done(&r)) {
		if (!pb_in_key(&r, &field, &wire))
			return false;
		uint64_t x;
		if (wire == PB_WIRE_VARINT) {
			if (!pb_in_varint(&r, &x))
				return false;
			if (field <= max)
				vals[field] = x;
		} else if (!pb_in_skip(&r, wire)) {
			return false;
		}
	}
	return true;
}

static bool local_str(const struct pprof_view *v, uint64_t i, uint32_t *out)
{
	if (i >= v->strings.n)
		return false;
	*out = v->gstr[i];
	return true;
}

static bool str_is(const struct pprof_view *v, uint32_t i, const char *s)
{
	size_t n = rt_strlen(s);
	return i < v->strings.n && v->strings.v[i].n == n && rt_memcmp(v->strings.v[i].p, s, n) == 0;
}

static uint32_t find_string(const struct pprof_view *v, const char *s)
{
	for (uint32_t i = 1; i < v->strings.n; i++)
		if (str_is(v, i, s))
			return i;
	return 0;
}

static uint32_t intern_cstr(struct otlp_encoder *e, const char *s)
{
	return intern(e, &e->strings, s, rt_strlen(s));
}

/* Writes tmp as field of out and empties tmp. */
static void put_message(struct rt_buf *out, uint32_t field, struct rt_buf *tmp)
{
	pb_put_bytes(out, field, tmp->data, tmp->len);
	rt_buf_reset(tmp);
}

static bool translate_tables(struct otlp_encoder *e, struct pprof_view *v, struct rt_buf *tmp)
{
	v->gstr = rt_calloc(v->strings.n ? v->strings.n : 1, sizeof(uint32_t));
	v->gmap = rt_calloc(v->mappings.n ? v->mappings.n : 1, sizeof(uint32_t));
	v->gfn = rt_calloc(v->functions.n ? v->functions.n : 1, sizeof(uint32_t));
	v->gloc = rt_calloc(v->locations.n ? v->locations.n : 1, sizeof(uint32_t));
	if (!v->gstr || !v->gmap || !v->gfn || !v->gloc || v->strings.n == 0 || v->strings.v[0].n != 0)
		return false;
	for (uint32_t i = 0; i < v->strings.n; i++)
		v->gstr[i] = intern(e, &e->strings, v->strings.v[i].p, v->strings.v[i].n);
	uint32_t build_id_key = intern_cstr(e, BUILD_ID_KEY);

	for (uint32_t i = 0; i < v->mappings.n; i++) {
		uint64_t f[PP_MAP_BUILD_ID + 1] = { 0 };
		uint32_t file, build_id;
		if (!read_scalars(v->mappings.v[i], f, PP_MAP_BUILD_ID) || f[PP_MAP_ID] != i + 1u ||
		    !local_str(v, f[PP_MAP_FILE], &file) || !local_str(v, f[PP_MAP_BUILD_ID], &build_id))
			return false;
		uint32_t attr = 0;
		if (build_id) {
			uint8_t kv[64];
			struct rt_buf any = { 0 };
			size_t n = pb_encode_uint_field(kv, KVU_KEY, build_id_key);
			uint32_t blen = v->strings.v[f[PP_MAP_BUILD_ID]].n;
			pb_put_bytes(&any, ANY_STRING, v->strings.v[f[PP_MAP_BUILD_ID]].p, blen);
			n += pb_encode_len_header(kv + n, KVU_VALUE, any.len);
			rt_buf_append(tmp, kv, n);
			rt_buf_append(tmp, any.data, any.len);
			rt_buf_free(&any);
			attr = intern(e, &e->attributes, tmp->data, tmp->len);
			rt_buf_reset(tmp);
		}
		pb_put_uint(tmp, MA_START, f[PP_MAP_START]);
		pb_put_uint(tmp, MA_LIMIT, f[PP_MAP_LIMIT]);
		if (f[PP_MAP_OFFSET])
			pb_put_uint(tmp, MA_OFFSET, f[PP_MAP_OFFSET]);
		if (file)
			pb_put_uint(tmp, MA_FILENAME, file);
		if (attr) {
			uint8_t packed[10];
			pb_put_bytes(tmp, MA_ATTRIBUTES, packed, pb_encode_varint(packed, attr));
		}
		v->gmap[i] = intern(e, &e->mappings, tmp->data, tmp->len);
		rt_buf_reset(tmp);
	}

	for (uint32_t i = 0; i < v->functions.n; i++) {
		uint64_t f[PP_FN_START_LINE + 1] = { 0 };
		uint32_t name, system_name, file;
		if (!read_scalars(v->functions.v[i], f, PP_FN_START_LINE) || f[PP_FN_ID] != i + 1u ||
		    !local_str(v, f[PP_FN_NAME], &name) || !local_str(v, f[PP_FN_SYSTEM_NAME], &system_name) ||
		    !local_str(v, f[PP_FN_FILE], &file))
			return false;
		if (name)
			pb_put_uint(tmp, FN_NAME, name);
		if (system_name)
			pb_put_uint(tmp, FN_SYSTEM_NAME, system_name);
		if (file)
			pb_put_uint(tmp, FN_FILENAME, file);
		if (f[PP_FN_START_LINE])
			pb_put_uint(tmp, FN_START_LINE, f[PP_FN_START_LINE]);
		v->gfn[i] = intern(e, &e->functions, tmp->data, tmp->len);
		rt_buf_reset(tmp);
	}

	struct rt_buf line = { 0 };
	for (uint32_t i = 0; i < v->locations.n; i++) {
		struct pb_in r = { v->locations.v[i].p, v->locations.v[i].p + v->locations.v[i].n };
		uint64_t id = 0, mapping = 0, address = 0;
		uint32_t field;
		enum pb_wire wire;
		bool ok = true;
		/* Lines in order (the innermost first, as in OTLP). */
		struct rt_buf lines = { 0 };
		while (ok && !pb_in_done(&r)) {
			ok = pb_in_key(&r, &field, &wire);
			if (!ok)
				break;
			if (field == PP_LOC_LINE && wire == PB_WIRE_LEN) {
				struct pb_in sub;
				uint64_t lf[PP_LINE_LINE + 1] = { 0 };
				ok = pb_in_len(&r, &sub) &&
				     read_scalars((struct slice){ sub.p, (uint32_t)(sub.end - sub.p) }, lf,
						  PP_LINE_LINE) &&
				     lf[PP_LINE_FUNCTION] >= 1 && lf[PP_LINE_FUNCTION] <= v->functions.n;
				if (!ok)
					break;
				pb_put_uint(&line, LI_FUNCTION, v->gfn[lf[PP_LINE_FUNCTION] - 1]);
				if (lf[PP_LINE_LINE])
					pb_put_uint(&line, LI_LINE, lf[PP_LINE_LINE]);
				put_message(&lines, LO_LINES, &line);
			} else if (wire == PB_WIRE_VARINT) {
				uint64_t x;
				ok = pb_in_varint(&r, &x);
				if (field == PP_LOC_ID)
					id = x;
				else if (field == PP_LOC_MAPPING)
					mapping = x;
				else if (field == PP_LOC_ADDRESS)
					address = x;
			} else {
				ok = pb_in_skip(&r, wire);
			}
		}
		ok = ok && id == i + 1u && mapping <= v->mappings.n && !lines.failed;
		if (ok) {
			if (mapping)
				pb_put_uint(tmp, LO_MAPPING, v->gmap[mapping - 1]);
			if (address)
				pb_put_uint(tmp, LO_ADDRESS, address);
			rt_buf_append(tmp, lines.data, lines.len);
			v->gloc[i] = intern(e, &e->locations, tmp->data, tmp->len);
			rt_buf_reset(tmp);
		}
		rt_buf_free(&lines);
		if (!ok) {
			rt_buf_free(&line);
			return false;
		}
	}
	rt_buf_free(&line);
	return !e->failed && !tmp->failed;
}

static bool trace_id_bytes(const struct slice *s, uint8_t out[16])
{
	if (s->n != 32)
		return false;
	for (int i = 0; i < 16; i++) {
		int hi = rt_hex_digit(s->p[2 * i]), lo = rt_hex_digit(s->p[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

#define MAX_SAMPLE_TYPES 8
#define MAX_SAMPLE_LABELS 32

struct label_in {
	uint64_t key, str, num_unit;
	int64_t num;
	bool is_num;
};

/* One pprof sample into the samples of each profile (outs[j] for sample type j). */
static bool translate_sample(struct otlp_encoder *e, const struct pprof_view *v, struct slice m,
			     struct rt_buf *outs, uint32_t n_types, struct rt_buf *tmp)
{
	struct pb_in r = { m.p, m.p + m.n };
	int64_t values[MAX_SAMPLE_TYPES] = { 0 };
	uint32_t n_values = 0;
	struct label_in labels[MAX_SAMPLE_LABELS];
	uint32_t n_labels = 0;
	struct rt_buf stack = { 0 };
	uint32_t field;
	enum pb_wire wire;
	bool ok = true;
	while (ok && !pb_in_done(&r)) {
		if (!pb_in_key(&r, &field, &wire)) {
			ok = false;
			break;
		}
		uint64_t x;
		struct pb_in sub;
		if ((field == PP_SAMPLE_LOCATION || field == PP_SAMPLE_VALUE) && wire == PB_WIRE_LEN) {
			ok = pb_in_len(&r, &sub);
			while (ok && !pb_in_done(&sub)) {
				ok = pb_in_varint(&sub, &x);
				if (!ok)
					break;
				if (field == PP_SAMPLE_LOCATION) {
					ok = x >= 1 && x <= v->locations.n;
					if (ok)
						pb_put_varint(&stack, v->gloc[x - 1]);
				} else if (n_values < MAX_SAMPLE_TYPES) {
					values[n_values++] = (int64_t)x;
				}
			}
		} else if ((field == PP_SAMPLE_LOCATION || field == PP_SAMPLE_VALUE) &&
			   wire == PB_WIRE_VARINT) {
			ok = pb_in_varint(&r, &x);
			if (ok && field == PP_SAMPLE_LOCATION) {
				ok = x >= 1 && x <= v->locations.n;
				if (ok)
					pb_put_varint(&stack, v->gloc[x - 1]);
			} else if (ok && n_values < MAX_SAMPLE_TYPES) {
				values[n_values++] = (int64_t)x;
			}
		} else if (field == PP_SAMPLE_LABEL && wire == PB_WIRE_LEN) {
			uint64_t lf[PP_LABEL_NUM_UNIT + 1] = { 0 };
			bool has_num = false;
			ok = pb_in_len(&r, &sub);
			struct pb_in lr = sub;
			while (ok && !pb_in_done(&lr)) {
				uint32_t lfield;
				enum pb_wire lwire;
				ok = pb_in_key(&lr, &lfield, &lwire);
				if (!ok)
					break;
				if (lwire == PB_WIRE_VARINT) {
					ok = pb_in_varint(&lr, &x);
					if (lfield <= PP_LABEL_NUM_UNIT)
						lf[lfield] = x;
					has_num |= lfield == PP_LABEL_NUM;
				} else {
					ok = pb_in_skip(&lr, lwire);
				}
			}
			if (ok && n_labels < MAX_SAMPLE_LABELS)
				labels[n_labels++] = (struct label_in){ lf[PP_LABEL_KEY], lf[PP_LABEL_STR],
									lf[PP_LABEL_NUM_UNIT],
									(int64_t)lf[PP_LABEL_NUM],
									has_num || !lf[PP_LABEL_STR] };
		} else {
			ok = pb_in_skip(&r, wire);
		}
	}
	if (!ok || stack.failed) {
		rt_buf_free(&stack);
		return false;
	}
	uint32_t stack_index = 0;
	if (stack.len) {
		pb_put_bytes(tmp, ST_LOCATIONS, stack.data, stack.len);
		stack_index = intern(e, &e->stacks, tmp->data, tmp->len);
		rt_buf_reset(tmp);
	}
	rt_buf_free(&stack);

	/* The span link, when the sample has both ids. */
	uint32_t link = 0;
	int span_label = -1, trace_label = -1;
	for (uint32_t i = 0; i < n_labels; i++) {
		if (v->span_key && labels[i].key == v->span_key && labels[i].is_num)
			span_label = (int)i;
		if (v->trace_key && labels[i].key == v->trace_key && !labels[i].is_num)
			trace_label = (int)i;
	}
	uint8_t trace[16];
	if (span_label >= 0 && trace_label >= 0 && labels[trace_label].str < v->strings.n &&
	    trace_id_bytes(&v->strings.v[labels[trace_label].str], trace)) {
		uint8_t span[8];
		uint64_t s = (uint64_t)labels[span_label].num;
		for (int i = 0; i < 8; i++)
			span[i] = (uint8_t)(s >> (56 - 8 * i));
		pb_put_bytes(tmp, LINK_TRACE_ID, trace, 16);
		pb_put_bytes(tmp, LINK_SPAN_ID, span, 8);
		link = intern(e, &e->links, tmp->data, tmp->len);
		rt_buf_reset(tmp);
	} else {
		span_label = trace_label = -1;
	}

	/* Attributes: every other label. */
	struct rt_buf attrs = { 0 }, any = { 0 };
	for (uint32_t i = 0; i < n_labels; i++) {
		if ((int)i == span_label || (int)i == trace_label)
			continue;
		uint32_t key, str = 0, unit = 0;
		if (!local_str(v, labels[i].key, &key) || key == 0 ||
		    (!labels[i].is_num && !local_str(v, labels[i].str, &str)) ||
		    (labels[i].is_num && !local_str(v, labels[i].num_unit, &unit)))
			continue;
		if (labels[i].key == v->thread_id_key)
			key = intern_cstr(e, "thread.id");
		else if (labels[i].key == v->thread_name_key)
			key = intern_cstr(e, "thread.name");
		if (labels[i].is_num)
			pb_put_int64(&any, ANY_INT, labels[i].num);
		else
			pb_put_bytes(&any, ANY_STRING, v->strings.v[labels[i].str].p,
				     v->strings.v[labels[i].str].n);
		pb_put_uint(tmp, KVU_KEY, key);
		put_message(tmp, KVU_VALUE, &any);
		if (unit)
			pb_put_uint(tmp, KVU_UNIT, unit);
		pb_put_varint(&attrs, intern(e, &e->attributes, tmp->data, tmp->len));
		rt_buf_reset(tmp);
	}
	rt_buf_free(&any);

	for (uint32_t j = 0; j < n_types && j < n_values; j++) {
		if (values[j] == 0)
			continue;
		if (stack_index)
			pb_put_uint(tmp, SA_STACK, stack_index);
		if (attrs.len)
			pb_put_bytes(tmp, SA_ATTRIBUTES, attrs.data, attrs.len);
		if (link)
			pb_put_uint(tmp, SA_LINK, link);
		uint8_t packed[10];
		pb_put_bytes(tmp, SA_VALUES, packed, pb_encode_varint(packed, (uint64_t)values[j]));
		put_message(&outs[j], PR_SAMPLES, tmp);
	}
	bool good = !attrs.failed;
	rt_buf_free(&attrs);
	return good && !e->failed;
}

static bool put_value_type(struct rt_buf *out, uint32_t field, const struct pprof_view *v, struct slice vt)
{
	uint64_t f[PP_VT_UNIT + 1] = { 0 };
	uint32_t type, unit;
	if (!read_scalars(vt, f, PP_VT_UNIT) || !local_str(v, f[PP_VT_TYPE], &type) ||
	    !local_str(v, f[PP_VT_UNIT], &unit))
		return false;
	uint8_t body[24];
	size_t n = 0;
	if (type)
		n += pb_encode_uint_field(body + n, VT_TYPE, type);
	if (unit)
		n += pb_encode_uint_field(body + n, VT_UNIT, unit);
	pb_put_bytes(out, field, body, n);
	return true;
}

int otlp_add_pprof(struct otlp_encoder *e, const uint8_t *pprof, size_t len)
{
	struct pprof_view v;
	rt_memset(&v, 0, sizeof(v));
	struct pb_in r = { pprof, pprof + len };
	struct rt_buf tmp = { 0 };
	struct rt_buf outs[MAX_SAMPLE_TYPES];
	rt_memset(outs, 0, sizeof(outs));
	int result = -EINVAL;
	if (!read_top(&r, &v) || v.sample_types.n == 0 || v.sample_types.n > MAX_SAMPLE_TYPES)
		goto out;
	if (!translate_tables(e, &v, &tmp)) {
		result = e->failed ? -ENOMEM : -EINVAL;
		goto out;
	}
	v.span_key = find_string(&v, "span id");
	v.trace_key = find_string(&v, "trace_id");
	v.thread_id_key = find_string(&v, "thread id");
	v.thread_name_key = find_string(&v, "thread name");
	if (!v.thread_id_key)
		v.thread_id_key = UINT32_MAX;
	if (!v.thread_name_key)
		v.thread_name_key = UINT32_MAX;
	for (uint32_t i = 0; i < v.samples.n; i++) {
		if (!translate_sample(e, &v, v.samples.v[i], outs, v.sample_types.n, &tmp)) {
			result = e->failed ? -ENOMEM : -EINVAL;
			goto out;
		}
	}
	void *arr = e->profiles;
	if (!sw_array_reserve(&arr, &e->cap_profiles, e->n_profiles + v.sample_types.n,
			      sizeof(*e->profiles))) {
		result = -ENOMEM;
		goto out;
	}
	e->profiles = arr;
	for (uint32_t j = 0; j < v.sample_types.n; j++) {
		struct rt_buf body = { 0 };
		uint8_t id[16];
		bool ok = put_value_type(&body, PR_SAMPLE_TYPE, &v, v.sample_types.v[j]);
		rt_buf_append(&body, outs[j].data, outs[j].len);
		pb_put_fixed64(&body, PR_TIME, v.time_nanos);
		if (v.duration_nanos)
			pb_put_uint(&body, PR_DURATION, v.duration_nanos);
		if (v.period_type.n)
			ok = ok && put_value_type(&body, PR_PERIOD_TYPE, &v, v.period_type);
		if (v.period)
			pb_put_int64(&body, PR_PERIOD, v.period);
		if (rt_random_bytes(id, sizeof(id)))
			pb_put_bytes(&body, PR_PROFILE_ID, id, sizeof(id));
		if (!ok || body.failed) {
			rt_buf_free(&body);
			result = ok ? -ENOMEM : -EINVAL;
			goto out;
		}
		e->profiles[e->n_profiles++] = body;
	}
	result = 0;
out:
	for (uint32_t j = 0; j < MAX_SAMPLE_TYPES; j++)
		rt_buf_free(&outs[j]);
	rt_buf_free(&tmp);
	view_free(&v);
	return result;
}

/* ---- the request ---- */

static void put_table(struct rt_buf *out, uint32_t field, const struct blob_table *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		pb_put_bytes(out, field, blob_at(t, i), t->len[i]);
}

static void put_string_kv(struct rt_buf *out, uint32_t field, const char *key, const char *value,
			  struct rt_buf *tmp, struct rt_buf *any)
{
	pb_put_bytes(any, ANY_STRING, value, rt_strlen(value));
	pb_put_bytes(tmp, KV_KEY, key, rt_strlen(key));
	put_message(tmp, KV_VALUE, any);
	put_message(out, field, tmp);
}

int otlp_encode_request(struct otlp_encoder *e, const struct otlp_attribute *resource, uint32_t n,
			const char *version, struct rt_buf *out)
{
	if (e->failed)
		return -ENOMEM;
	struct rt_buf res = { 0 }, scope = { 0 }, rp = { 0 }, tmp = { 0 }, any = { 0 };
	for (uint32_t i = 0; i < n; i++)
		put_string_kv(&res, RES_ATTRIBUTES, resource[i].key, resource[i].value, &tmp, &any);
	/* ScopeProfiles: the scope, then every profile. */
	pb_put_bytes(&tmp, SCOPE_NAME, "stowaway", 8);
	pb_put_bytes(&tmp, SCOPE_VERSION, version, rt_strlen(version));
	put_message(&scope, SP_SCOPE, &tmp);
	for (uint32_t i = 0; i < e->n_profiles; i++)
		pb_put_bytes(&scope, SP_PROFILES, e->profiles[i].data, e->profiles[i].len);
	put_message(&rp, RP_RESOURCE, &res);
	put_message(&rp, RP_SCOPE_PROFILES, &scope);
	put_message(out, REQ_RESOURCE_PROFILES, &rp);
	struct rt_buf dict = { 0 };
	put_table(&dict, DI_MAPPING, &e->mappings);
	put_table(&dict, DI_LOCATION, &e->locations);
	put_table(&dict, DI_FUNCTION, &e->functions);
	put_table(&dict, DI_LINK, &e->links);
	put_table(&dict, DI_STRING, &e->strings);
	put_table(&dict, DI_ATTRIBUTE, &e->attributes);
	put_table(&dict, DI_STACK, &e->stacks);
	put_message(out, REQ_DICTIONARY, &dict);
	bool failed = res.failed || scope.failed || rp.failed || tmp.failed || any.failed ||
		      dict.failed || out->failed;
	rt_buf_free(&res);
	rt_buf_free(&scope);
	rt_buf_free(&rp);
	rt_buf_free(&tmp);
	rt_buf_free(&any);
	rt_buf_free(&dict);
	return failed ? -ENOMEM : 0;
}
