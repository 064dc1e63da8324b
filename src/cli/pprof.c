/* pprof decoder (protobuf wire format, checked at every step) and a small
 * encoder for profiles with one sample type. */
#include "cli/pprof.h"

#include <stdlib.h>
#include <string.h>

#include "cli/util.h"
#include "deflate/deflate.h"
#include "encode/pb.h"

/* The library's protobuf reader (encode/pb.h), with one message for each
 * way the input can be malformed. */
static int pb_varint(struct pb_in *r, uint64_t *out)
{
	if (pb_in_varint(r, out))
		return 0;
	if (pb_in_done(r))
		return cli_fail("profile is truncated (varint)");
	return cli_fail("profile has an overlong varint");
}

static int pb_key(struct pb_in *r, uint64_t *field, unsigned *wire)
{
	const uint8_t *at = r->p;
	uint32_t f;
	enum pb_wire w;
	if (pb_in_key(r, &f, &w)) {
		*field = f;
		*wire = (unsigned)w;
		return 0;
	}
	struct pb_in again = {at, r->end};
	uint64_t key;
	if (pb_varint(&again, &key) != 0)
		return -1;
	return cli_fail("profile has a field numbered %llu", (unsigned long long)(key >> 3));
}

/* Opens a length-delimited field as a sub-reader. */
static int pb_sub(struct pb_in *r, struct pb_in *sub)
{
	const uint8_t *at = r->p;
	if (pb_in_len(r, sub))
		return 0;
	r->p = at;
	uint64_t n;
	if (pb_varint(r, &n) != 0)
		return -1;
	return cli_fail("profile is truncated (field length %llu)", (unsigned long long)n);
}

static int pb_skip(struct pb_in *r, unsigned wire)
{
	uint64_t v;
	struct pb_in sub;
	switch (wire) {
	case PB_WIRE_VARINT:
		return pb_varint(r, &v);
	case PB_WIRE_FIXED64:
	case PB_WIRE_FIXED32:
		if (pb_in_skip(r, (enum pb_wire)wire))
			return 0;
		return cli_fail("profile is truncated (fixed field)");
	case PB_WIRE_LEN:
		return pb_sub(r, &sub);
	default:
		return cli_fail("profile has unsupported wire type %u", wire);
	}
}

/* A scalar field must use the varint wire type. */
static int pb_scalar(struct pb_in *r, unsigned wire, uint64_t *out)
{
	if (wire != PB_WIRE_VARINT)
		return cli_fail("profile has wire type %u for an integer field", wire);
	return pb_varint(r, out);
}

static int pb_message(unsigned wire, struct pb_in *r, struct pb_in *sub)
{
	if (wire != PB_WIRE_LEN)
		return cli_fail("profile has wire type %u for a message field", wire);
	return pb_sub(r, sub);
}

/* Repeated integers, packed or not; appended to *arr. */
static int pb_repeated(struct pb_in *r, unsigned wire, uint64_t **arr, size_t *n, size_t *cap)
{
	if (wire == PB_WIRE_VARINT) {
		uint64_t v;
		if (pb_varint(r, &v) != 0)
			return -1;
		*arr = xgrow(*arr, cap, *n + 1, sizeof(**arr));
		(*arr)[(*n)++] = v;
		return 0;
	}
	struct pb_in sub;
	if (pb_message(wire, r, &sub) != 0)
		return -1;
	while (!pb_in_done(&sub)) {
		uint64_t v;
		if (pb_varint(&sub, &v) != 0)
			return -1;
		*arr = xgrow(*arr, cap, *n + 1, sizeof(**arr));
		(*arr)[(*n)++] = v;
	}
	return 0;
}

static int decode_value_type(struct pb_in *r, struct pp_value_type *vt)
{
	while (!pb_in_done(r)) {
		uint64_t field;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			return -1;
		int rc;
		if (field == 1)
			rc = pb_scalar(r, wire, &vt->type);
		else if (field == 2)
			rc = pb_scalar(r, wire, &vt->unit);
		else
			rc = pb_skip(r, wire);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int decode_label(struct pb_in *r, struct pp_label *l)
{
	while (!pb_in_done(r)) {
		uint64_t field, v = 0;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			return -1;
		int rc;
		if (field == 1) {
			rc = pb_scalar(r, wire, &l->key);
		} else if (field == 2) {
			rc = pb_scalar(r, wire, &l->str);
		} else if (field == 3) {
			rc = pb_scalar(r, wire, &v);
			l->num = (int64_t)v;
		} else if (field == 4) {
			rc = pb_scalar(r, wire, &l->num_unit);
		} else {
			rc = pb_skip(r, wire);
		}
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int decode_sample(struct pb_in *r, struct pp_sample *s, size_t *n_values)
{
	size_t loc_cap = 0, val_cap = 0, label_cap = 0;
	uint64_t *values = NULL;
	while (!pb_in_done(r)) {
		uint64_t field;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			goto fail;
		int rc;
		if (field == 1) {
			rc = pb_repeated(r, wire, &s->locations, &s->n_locations, &loc_cap);
		} else if (field == 2) {
			rc = pb_repeated(r, wire, &values, n_values, &val_cap);
		} else if (field == 3) {
			struct pb_in sub;
			rc = pb_message(wire, r, &sub);
			if (rc == 0) {
				s->labels = xgrow(s->labels, &label_cap, s->n_labels + 1, sizeof(*s->labels));
				struct pp_label *l = &s->labels[s->n_labels++];
				memset(l, 0, sizeof(*l));
				rc = decode_label(&sub, l);
			}
		} else {
			rc = pb_skip(r, wire);
		}
		if (rc != 0)
			goto fail;
	}
	/* int64 values travel as plain varints: reinterpret in place. */
	s->values = xcalloc(*n_values, sizeof(int64_t));
	for (size_t i = 0; i < *n_values; i++)
		s->values[i] = (int64_t)values[i];
	free(values);
	return 0;
fail:
	free(values);
	return -1;
}

static int decode_line(struct pb_in *r, struct pp_line *l)
{
	while (!pb_in_done(r)) {
		uint64_t field, v = 0;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			return -1;
		int rc;
		if (field == 1) {
			rc = pb_scalar(r, wire, &l->function);
		} else if (field == 2) {
			rc = pb_scalar(r, wire, &v);
			l->line = (int64_t)v;
		} else {
			rc = pb_skip(r, wire);
		}
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int decode_location(struct pb_in *r, struct pp_location *loc)
{
	size_t line_cap = 0;
	while (!pb_in_done(r)) {
		uint64_t field;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			return -1;
		int rc;
		if (field == 1) {
			rc = pb_scalar(r, wire, &loc->id);
		} else if (field == 2) {
			rc = pb_scalar(r, wire, &loc->mapping_id);
		} else if (field == 3) {
			rc = pb_scalar(r, wire, &loc->address);
		} else if (field == 4) {
			struct pb_in sub;
			rc = pb_message(wire, r, &sub);
			if (rc == 0) {
				loc->lines = xgrow(loc->lines, &line_cap, loc->n_lines + 1, sizeof(*loc->lines));
				struct pp_line *l = &loc->lines[loc->n_lines++];
				memset(l, 0, sizeof(*l));
				rc = decode_line(&sub, l);
			}
		} else {
			rc = pb_skip(r, wire);
		}
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int decode_mapping(struct pb_in *r, struct pp_mapping *m)
{
	while (!pb_in_done(r)) {
		uint64_t field;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			return -1;
		int rc;
		if (field == 1)
			rc = pb_scalar(r, wire, &m->id);
		else if (field == 2)
			rc = pb_scalar(r, wire, &m->memory_start);
		else if (field == 4)
			rc = pb_scalar(r, wire, &m->file_offset);
		else if (field == 5)
			rc = pb_scalar(r, wire, &m->filename);
		else if (field == 6)
			rc = pb_scalar(r, wire, &m->build_id);
		else
			rc = pb_skip(r, wire);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int decode_function(struct pb_in *r, struct pp_function *f)
{
	while (!pb_in_done(r)) {
		uint64_t field, v = 0;
		unsigned wire;
		if (pb_key(r, &field, &wire) != 0)
			return -1;
		int rc;
		if (field == 1) {
			rc = pb_scalar(r, wire, &f->id);
		} else if (field == 2) {
			rc = pb_scalar(r, wire, &f->name);
		} else if (field == 3) {
			rc = pb_scalar(r, wire, &f->system_name);
		} else if (field == 4) {
			rc = pb_scalar(r, wire, &f->filename);
		} else if (field == 5) {
			rc = pb_scalar(r, wire, &v);
			f->start_line = (int64_t)v;
		} else {
			rc = pb_skip(r, wire);
		}
		if (rc != 0)
			return -1;
	}
	return 0;
}

struct decode_caps {
	size_t sample_types, samples, mappings, locations, functions, strings, string_lens, comments;
};

static int decode_field(struct pb_in *r, uint64_t field, unsigned wire, struct pp_profile *p,
			struct decode_caps *caps, size_t **value_counts, size_t *value_counts_cap)
{
	struct pb_in sub;
	uint64_t v;
	switch (field) {
	case 1:
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		p->sample_types = xgrow(p->sample_types, &caps->sample_types, p->n_sample_types + 1,
					sizeof(*p->sample_types));
		memset(&p->sample_types[p->n_sample_types], 0, sizeof(*p->sample_types));
		return decode_value_type(&sub, &p->sample_types[p->n_sample_types++]);
	case 2: {
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		p->samples = xgrow(p->samples, &caps->samples, p->n_samples + 1, sizeof(*p->samples));
		*value_counts = xgrow(*value_counts, value_counts_cap, p->n_samples + 1, sizeof(size_t));
		struct pp_sample *s = &p->samples[p->n_samples];
		size_t *n_values = &(*value_counts)[p->n_samples];
		memset(s, 0, sizeof(*s));
		*n_values = 0;
		p->n_samples++;
		return decode_sample(&sub, s, n_values);
	}
	case 3: {
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		p->mappings = xgrow(p->mappings, &caps->mappings, p->n_mappings + 1, sizeof(*p->mappings));
		struct pp_mapping *m = &p->mappings[p->n_mappings++];
		memset(m, 0, sizeof(*m));
		return decode_mapping(&sub, m);
	}
	case 4: {
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		p->locations = xgrow(p->locations, &caps->locations, p->n_locations + 1, sizeof(*p->locations));
		struct pp_location *loc = &p->locations[p->n_locations++];
		memset(loc, 0, sizeof(*loc));
		return decode_location(&sub, loc);
	}
	case 5: {
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		p->functions = xgrow(p->functions, &caps->functions, p->n_functions + 1, sizeof(*p->functions));
		struct pp_function *f = &p->functions[p->n_functions++];
		memset(f, 0, sizeof(*f));
		return decode_function(&sub, f);
	}
	case 6: {
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		p->strings = xgrow(p->strings, &caps->strings, p->n_strings + 1, sizeof(*p->strings));
		p->string_lens = xgrow(p->string_lens, &caps->string_lens, p->n_strings + 1,
				       sizeof(*p->string_lens));
		p->string_lens[p->n_strings] = (size_t)(sub.end - sub.p);
		p->strings[p->n_strings++] = xstrndup((const char *)sub.p, (size_t)(sub.end - sub.p));
		return 0;
	}
	case 9:
		if (pb_scalar(r, wire, &v) != 0)
			return -1;
		p->time_nanos = (int64_t)v;
		return 0;
	case 10:
		if (pb_scalar(r, wire, &v) != 0)
			return -1;
		p->duration_nanos = (int64_t)v;
		return 0;
	case 11:
		if (pb_message(wire, r, &sub) != 0)
			return -1;
		return decode_value_type(&sub, &p->period_type);
	case 12:
		if (pb_scalar(r, wire, &v) != 0)
			return -1;
		p->period = (int64_t)v;
		return 0;
	case 13:
		return pb_repeated(r, wire, &p->comments, &p->n_comments, &caps->comments);
	case 14:
		return pb_scalar(r, wire, &p->default_sample_type);
	default: /* drop/keep frames, doc url: not needed */
		return pb_skip(r, wire);
	}
}

struct id_index {
	uint64_t id;
	uint32_t index;
};

static int cmp_id_index(const void *a, const void *b)
{
	uint64_t x = ((const struct id_index *)a)->id, y = ((const struct id_index *)b)->id;
	return x < y ? -1 : x > y;
}

/* Sorted (id, index) table; rejects zero and duplicate ids. */
static int build_id_table(struct id_index *table, size_t n, const char *what)
{
	qsort(table, n, sizeof(*table), cmp_id_index);
	for (size_t i = 0; i < n; i++) {
		if (table[i].id == 0)
			return cli_fail("profile has a %s with id 0", what);
		if (i > 0 && table[i].id == table[i - 1].id)
			return cli_fail("profile has two %ss with id %llu", what,
					(unsigned long long)table[i].id);
	}
	return 0;
}

static int lookup_id(const struct id_index *table, size_t n, uint64_t id, uint64_t *index)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (table[mid].id == id) {
			*index = table[mid].index;
			return 0;
		}
		if (table[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int check_str(const struct pp_profile *p, uint64_t index, const char *what)
{
	if (index >= p->n_strings)
		return cli_fail("profile refers to string %llu (%s) but has %zu strings",
				(unsigned long long)index, what, p->n_strings);
	return 0;
}

static int check_value_type(const struct pp_profile *p, const struct pp_value_type *vt)
{
	if (check_str(p, vt->type, "sample type") != 0 || check_str(p, vt->unit, "unit") != 0)
		return -1;
	return 0;
}

static int resolve_functions(struct pp_profile *p, struct id_index **table)
{
	if (p->n_functions > UINT32_MAX)
		return cli_fail("profile has too many functions");
	*table = xcalloc(p->n_functions, sizeof(**table));
	for (size_t i = 0; i < p->n_functions; i++) {
		const struct pp_function *f = &p->functions[i];
		if (check_str(p, f->name, "function name") != 0 ||
		    check_str(p, f->system_name, "system name") != 0 ||
		    check_str(p, f->filename, "file name") != 0)
			return -1;
		(*table)[i].id = f->id;
		(*table)[i].index = (uint32_t)i;
	}
	return build_id_table(*table, p->n_functions, "function");
}

static int resolve_mappings(struct pp_profile *p, struct id_index **table)
{
	if (p->n_mappings > UINT32_MAX - 1)
		return cli_fail("profile has too many mappings");
	*table = xcalloc(p->n_mappings, sizeof(**table));
	for (size_t i = 0; i < p->n_mappings; i++) {
		if (check_str(p, p->mappings[i].filename, "mapping file name") != 0 ||
		    check_str(p, p->mappings[i].build_id, "mapping build id") != 0)
			return -1;
		(*table)[i].id = p->mappings[i].id;
		(*table)[i].index = (uint32_t)i;
	}
	return build_id_table(*table, p->n_mappings, "mapping");
}

static int resolve_locations(struct pp_profile *p, const struct id_index *functions,
			     const struct id_index *mappings, struct id_index **table)
{
	if (p->n_locations > UINT32_MAX)
		return cli_fail("profile has too many locations");
	*table = xcalloc(p->n_locations, sizeof(**table));
	for (size_t i = 0; i < p->n_locations; i++) {
		struct pp_location *loc = &p->locations[i];
		if (loc->mapping_id != 0) {
			uint64_t index;
			if (lookup_id(mappings, p->n_mappings, loc->mapping_id, &index) != 0)
				return cli_fail("location %llu refers to missing mapping %llu",
						(unsigned long long)loc->id, (unsigned long long)loc->mapping_id);
			loc->mapping_id = index + 1;
		}
		for (size_t j = 0; j < loc->n_lines; j++) {
			uint64_t fid = loc->lines[j].function;
			if (lookup_id(functions, p->n_functions, fid, &loc->lines[j].function) != 0)
				return cli_fail("location %llu refers to missing function %llu",
						(unsigned long long)loc->id, (unsigned long long)fid);
		}
		(*table)[i].id = loc->id;
		(*table)[i].index = (uint32_t)i;
	}
	return build_id_table(*table, p->n_locations, "location");
}

static int resolve_samples(struct pp_profile *p, const struct id_index *locations,
			   const size_t *value_counts)
{
	if (p->n_samples == 0 || !value_counts)
		return 0;
	for (size_t i = 0; i < p->n_samples; i++) {
		struct pp_sample *s = &p->samples[i];
		if (value_counts[i] != p->n_sample_types)
			return cli_fail("sample %zu has %zu values for %zu sample types", i, value_counts[i],
					p->n_sample_types);
		for (size_t j = 0; j < s->n_locations; j++) {
			uint64_t lid = s->locations[j];
			if (lookup_id(locations, p->n_locations, lid, &s->locations[j]) != 0)
				return cli_fail("sample %zu refers to missing location %llu", i,
						(unsigned long long)lid);
		}
		for (size_t j = 0; j < s->n_labels; j++) {
			const struct pp_label *l = &s->labels[j];
			if (check_str(p, l->key, "label key") != 0 || check_str(p, l->str, "label value") != 0 ||
			    check_str(p, l->num_unit, "label unit") != 0)
				return -1;
		}
	}
	return 0;
}

static int resolve(struct pp_profile *p, const size_t *value_counts)
{
	if (p->n_strings == 0 || p->string_lens[0] != 0)
		return cli_fail("profile string table does not start with the empty string");
	if (p->n_sample_types == 0)
		return cli_fail("profile has no sample type");
	for (size_t i = 0; i < p->n_sample_types; i++)
		if (check_value_type(p, &p->sample_types[i]) != 0)
			return -1;
	if (check_value_type(p, &p->period_type) != 0 ||
	    check_str(p, p->default_sample_type, "default sample type") != 0)
		return -1;
	for (size_t i = 0; i < p->n_comments; i++)
		if (check_str(p, p->comments[i], "comment") != 0)
			return -1;
	struct id_index *functions = NULL, *locations = NULL, *mappings = NULL;
	int rc = resolve_functions(p, &functions);
	if (rc == 0)
		rc = resolve_mappings(p, &mappings);
	if (rc == 0)
		rc = resolve_locations(p, functions, mappings, &locations);
	if (rc == 0)
		rc = resolve_samples(p, locations, value_counts);
	free(functions);
	free(locations);
	free(mappings);
	return rc;
}

int pprof_decode(const unsigned char *data, size_t len, struct pp_profile *p)
{
	memset(p, 0, sizeof(*p));
	struct pb_in r = {data, data + len};
	struct decode_caps caps = {0};
	size_t *value_counts = NULL, value_counts_cap = 0;
	int rc = 0;
	while (rc == 0 && !pb_in_done(&r)) {
		uint64_t field;
		unsigned wire;
		rc = pb_key(&r, &field, &wire);
		if (rc == 0)
			rc = decode_field(&r, field, wire, p, &caps, &value_counts, &value_counts_cap);
	}
	if (rc == 0)
		rc = resolve(p, value_counts);
	free(value_counts);
	if (rc != 0)
		pprof_free(p);
	return rc;
}

/* Every gzip member of in[0..len) into *out (at most max_out bytes in all).
 * The last member's ISIZE, or four times the input, is the first guess of
 * the size, never more than DEFLATE can expand the input to (a forged ISIZE
 * asks for nothing); the buffer doubles while the output does not fit. */
#define DEFLATE_MAX_RATIO 1032 /* a 258-byte match costs at least 2 bits */
static int gunzip_all(const unsigned char *in, size_t len, size_t max_out, struct cli_buf *out)
{
	size_t pos = 0;
	do {
		size_t rest = len - pos;
		size_t room = gzip_trailer_size(in + pos, rest);
		if (rest <= SIZE_MAX / 4 && room < 4 * rest)
			room = 4 * rest;
		if (rest <= SIZE_MAX / DEFLATE_MAX_RATIO && room > DEFLATE_MAX_RATIO * rest)
			room = DEFLATE_MAX_RATIO * rest;
		for (;;) {
			if (room > max_out - out->len)
				room = max_out - out->len;
			out->data = xgrow(out->data, &out->cap, out->len + room + 1, 1);
			size_t used = 0, n = 0;
			int rc = gzip_decompress(in + pos, rest, out->data + out->len, room, &used, &n);
			if (rc == DEFLATE_OK) {
				out->len += n;
				pos += used;
				break;
			}
			if (rc != DEFLATE_NO_SPACE)
				return cli_fail("%s", deflate_status_text(rc));
			if (room == max_out - out->len)
				return cli_fail("decompressed data exceeds %zu bytes", max_out);
			room = room > SIZE_MAX / 2 ? SIZE_MAX : 2 * room + 1;
		}
		/* Trailing zero padding after the last member is tolerated. */
		while (pos < len && in[pos] == 0)
			pos++;
	} while (pos < len);
	return 0;
}

int pprof_raw_bytes(const unsigned char *data, size_t len, struct cli_buf *raw)
{
	if (!gzip_is_gzip(data, len)) {
		buf_append(raw, data, len);
		return 0;
	}
	return gunzip_all(data, len, PPROF_MAX_DECODED, raw);
}

int pprof_decode_any(const unsigned char *data, size_t len, struct pp_profile *p)
{
	if (!gzip_is_gzip(data, len))
		return pprof_decode(data, len, p);
	struct cli_buf raw = {0};
	int rc = gunzip_all(data, len, PPROF_MAX_DECODED, &raw);
	if (rc == 0)
		rc = pprof_decode(raw.data, raw.len, p);
	else
		memset(p, 0, sizeof(*p));
	buf_free(&raw);
	return rc;
}

void pprof_free(struct pp_profile *p)
{
	for (size_t i = 0; i < p->n_samples; i++) {
		free(p->samples[i].locations);
		free(p->samples[i].values);
		free(p->samples[i].labels);
	}
	for (size_t i = 0; i < p->n_locations; i++)
		free(p->locations[i].lines);
	for (size_t i = 0; i < p->n_strings; i++)
		free(p->strings[i]);
	free(p->samples);
	free(p->mappings);
	free(p->locations);
	free(p->functions);
	free(p->strings);
	free(p->string_lens);
	free(p->sample_types);
	free(p->comments);
	memset(p, 0, sizeof(*p));
}

const char *pp_str(const struct pp_profile *p, uint64_t index)
{
	return index < p->n_strings ? p->strings[index] : "";
}

/* ---- encoder ---- */

/* Every distinct frame name gets one Function and one Location, both with
 * the id (string index of the name) so no extra table is needed. */
struct pp_encoder {
	struct cli_buf samples;   /* encoded Sample fields (field 2) */
	char **strings;           /* string table, strings[0] = "" */
	size_t n_strings, strings_cap;
	uint64_t *string_slots;   /* open addressing: string index + 1, 0 empty */
	size_t n_slots;
	unsigned char *is_frame;  /* by string index: used as a frame name */
	size_t is_frame_cap;
	uint64_t type, unit;
	int64_t time_nanos;
};

/* The library's protobuf writer (encode/pb.c) into the CLI's buffers. */
static void put_varint(struct cli_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	buf_append(b, tmp, pb_encode_varint(tmp, v));
}

static void put_uint_field(struct cli_buf *b, uint32_t field, uint64_t v)
{
	uint8_t tmp[20];
	buf_append(b, tmp, pb_encode_uint_field(tmp, field, v));
}

static void put_bytes_field(struct cli_buf *b, uint32_t field, const void *data, size_t len)
{
	uint8_t tmp[20];
	buf_append(b, tmp, pb_encode_len_header(tmp, field, len));
	buf_append(b, data, len);
}

static void rehash_strings(struct pp_encoder *e)
{
	free(e->string_slots);
	e->n_slots = e->n_slots ? e->n_slots * 2 : 1024;
	e->string_slots = xcalloc(e->n_slots, sizeof(*e->string_slots));
	for (size_t i = 0; i < e->n_strings; i++) {
		size_t h = (size_t)hash_bytes(e->strings[i], strlen(e->strings[i]), 0) & (e->n_slots - 1);
		while (e->string_slots[h])
			h = (h + 1) & (e->n_slots - 1);
		e->string_slots[h] = i + 1;
	}
}

static uint64_t intern(struct pp_encoder *e, const char *s)
{
	if (2 * (e->n_strings + 1) > e->n_slots)
		rehash_strings(e);
	size_t len = strlen(s);
	size_t h = (size_t)hash_bytes(s, len, 0) & (e->n_slots - 1);
	while (e->string_slots[h]) {
		uint64_t index = e->string_slots[h] - 1;
		if (strcmp(e->strings[index], s) == 0)
			return index;
		h = (h + 1) & (e->n_slots - 1);
	}
	e->strings = xgrow(e->strings, &e->strings_cap, e->n_strings + 1, sizeof(*e->strings));
	e->strings[e->n_strings] = xstrndup(s, len);
	e->string_slots[h] = e->n_strings + 1;
	return e->n_strings++;
}

struct pp_encoder *pp_encoder_new(const char *type, const char *unit, int64_t time_nanos)
{
	struct pp_encoder *e = xcalloc(1, sizeof(*e));
	intern(e, "");
	e->type = intern(e, type);
	e->unit = intern(e, unit);
	e->time_nanos = time_nanos;
	return e;
}

void pp_encoder_add(struct pp_encoder *e, const char *const *frames_leaf_first, size_t depth,
		    int64_t value)
{
	struct cli_buf ids = {0}, sample = {0};
	for (size_t i = 0; i < depth; i++) {
		const char *name = frames_leaf_first[i][0] ? frames_leaf_first[i] : "?";
		uint64_t index = intern(e, name);
		size_t old_cap = e->is_frame_cap;
		e->is_frame = xgrow(e->is_frame, &e->is_frame_cap, index + 1, 1);
		memset(e->is_frame + old_cap, 0, e->is_frame_cap - old_cap);
		e->is_frame[index] = 1;
		put_varint(&ids, index);
	}
	put_bytes_field(&sample, 1, ids.data, ids.len);
	struct cli_buf values = {0};
	put_varint(&values, (uint64_t)value);
	put_bytes_field(&sample, 2, values.data, values.len);
	put_bytes_field(&e->samples, 2, sample.data, sample.len);
	buf_free(&ids);
	buf_free(&values);
	buf_free(&sample);
}

void pp_encoder_finish(struct pp_encoder *e, int compress, struct cli_buf *out)
{
	struct cli_buf msg = {0}, sub = {0}, line = {0};
	put_uint_field(&sub, 1, e->type);
	put_uint_field(&sub, 2, e->unit);
	put_bytes_field(&msg, 1, sub.data, sub.len);
	buf_append(&msg, e->samples.data, e->samples.len);
	for (size_t i = 0; i < e->n_strings && i < e->is_frame_cap; i++) {
		if (!e->is_frame[i])
			continue;
		line.len = 0;
		put_uint_field(&line, 1, i);
		sub.len = 0;
		put_uint_field(&sub, 1, i);
		put_bytes_field(&sub, 4, line.data, line.len);
		put_bytes_field(&msg, 4, sub.data, sub.len);
		sub.len = 0;
		put_uint_field(&sub, 1, i);
		put_uint_field(&sub, 2, i);
		put_uint_field(&sub, 3, i);
		put_bytes_field(&msg, 5, sub.data, sub.len);
	}
	for (size_t i = 0; i < e->n_strings; i++)
		put_bytes_field(&msg, 6, e->strings[i], strlen(e->strings[i]));
	if (e->time_nanos)
		put_uint_field(&msg, 9, (uint64_t)e->time_nanos);
	sub.len = 0;
	put_uint_field(&sub, 1, e->type);
	put_uint_field(&sub, 2, e->unit);
	put_bytes_field(&msg, 11, sub.data, sub.len);
	if (compress) {
		struct rt_buf packed = {0};
		if (gz_compress(msg.data, msg.len, GZ_LEVEL_DEFAULT, &packed) != 0)
			cli_out_of_memory();
		buf_append(out, packed.data, packed.len);
		rt_buf_free(&packed);
	} else
		buf_append(out, msg.data, msg.len);
	buf_free(&msg);
	buf_free(&sub);
	buf_free(&line);
	for (size_t i = 0; i < e->n_strings; i++)
		free(e->strings[i]);
	free(e->strings);
	free(e->string_slots);
	free(e->is_frame);
	buf_free(&e->samples);
	free(e);
}

/* ---- rewriting a decoded-then-modified profile ---- */

static void put_location(struct cli_buf *out, const struct pp_profile *p, const struct pp_location *l)
{
	struct cli_buf msg = {0}, line = {0};
	put_uint_field(&msg, 1, l->id);
	if (l->mapping_id)
		put_uint_field(&msg, 2, p->mappings[l->mapping_id - 1].id);
	if (l->address)
		put_uint_field(&msg, 3, l->address);
	for (size_t i = 0; i < l->n_lines; i++) {
		line.len = 0;
		put_uint_field(&line, 1, p->functions[l->lines[i].function].id);
		if (l->lines[i].line)
			put_uint_field(&line, 2, (uint64_t)l->lines[i].line);
		put_bytes_field(&msg, 4, line.data, line.len);
	}
	put_bytes_field(out, 4, msg.data, msg.len);
	buf_free(&msg);
	buf_free(&line);
}

static void put_function(struct cli_buf *out, const struct pp_function *f)
{
	struct cli_buf msg = {0};
	put_uint_field(&msg, 1, f->id);
	if (f->name)
		put_uint_field(&msg, 2, f->name);
	if (f->system_name)
		put_uint_field(&msg, 3, f->system_name);
	if (f->filename)
		put_uint_field(&msg, 4, f->filename);
	if (f->start_line)
		put_uint_field(&msg, 5, (uint64_t)f->start_line);
	put_bytes_field(out, 5, msg.data, msg.len);
	buf_free(&msg);
}

int pprof_rewrite(const unsigned char *raw, size_t len, const struct pp_profile *p,
		  const struct pp_rewrite *rw, struct cli_buf *out)
{
	struct pb_in r = {raw, raw + len};
	size_t nth_location = 0, nth_mapping = 0;
	while (!pb_in_done(&r)) {
		const uint8_t *start = r.p;
		uint64_t field;
		unsigned wire;
		if (pb_key(&r, &field, &wire) != 0 || pb_skip(&r, wire) != 0)
			return cli_fail("malformed profile");
		if (field == 4 && wire == PB_WIRE_LEN) {
			size_t i = nth_location++;
			if (i < p->n_locations && rw->location_changed[i]) {
				put_location(out, p, &p->locations[i]);
				continue;
			}
		} else if (field == 3 && wire == PB_WIRE_LEN) {
			size_t i = nth_mapping++;
			if (i < p->n_mappings && rw->mapping_flags[i]) {
				/* The same message with has_* fields appended (the last value wins). */
				struct pb_in m = {start, r.p};
				struct pb_in body;
				uint64_t f2;
				unsigned w2;
				if (pb_key(&m, &f2, &w2) != 0 || pb_sub(&m, &body) != 0)
					return cli_fail("malformed mapping");
				struct cli_buf msg = {0};
				buf_append(&msg, body.p, (size_t)(body.end - body.p));
				for (uint32_t k = 0; k < 4; k++)
					if (rw->mapping_flags[i] & (1u << k))
						put_uint_field(&msg, 7 + k, 1);
				put_bytes_field(out, 3, msg.data, msg.len);
				buf_free(&msg);
				continue;
			}
		}
		buf_append(out, start, (size_t)(r.p - start));
	}
	for (size_t i = rw->old_functions; i < p->n_functions; i++)
		put_function(out, &p->functions[i]);
	for (size_t i = rw->old_strings; i < p->n_strings; i++)
		put_bytes_field(out, 6, p->strings[i], p->string_lens[i]);
	return 0;
}
