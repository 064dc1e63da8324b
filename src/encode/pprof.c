/* pprof encoder (see pprof.h).
 *
 * Pass 1 walks the selected samples: each distinct stack is translated once
 * into the packed varints of its location ids (cached by stack id), each
 * distinct pc is resolved once into a location, and samples are written as
 * they go.  Mappings, locations and functions follow, then the scalar
 * fields, then the string table, which may legally come last.  Every
 * message's length is computed before it is written.
 */
#include "encode/pprof.h"
#include "encode/pb.h"
#include "profile/htab.h"
#include "demangle/demangle.h"

#include <linux/errno.h>

/* Profile message field numbers. */
enum {
	F_PROFILE_SAMPLE_TYPE = 1,
	F_PROFILE_SAMPLE = 2,
	F_PROFILE_MAPPING = 3,
	F_PROFILE_LOCATION = 4,
	F_PROFILE_FUNCTION = 5,
	F_PROFILE_STRING_TABLE = 6,
	F_PROFILE_DROP_FRAMES = 7,
	F_PROFILE_KEEP_FRAMES = 8,
	F_PROFILE_TIME_NANOS = 9,
	F_PROFILE_DURATION_NANOS = 10,
	F_PROFILE_PERIOD_TYPE = 11,
	F_PROFILE_PERIOD = 12,
	F_PROFILE_COMMENT = 13,
	F_PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	F_PROFILE_DOC_URL = 15,
};
enum { F_VALUE_TYPE_TYPE = 1, F_VALUE_TYPE_UNIT = 2 };
enum { F_SAMPLE_LOCATION_ID = 1, F_SAMPLE_VALUE = 2, F_SAMPLE_LABEL = 3 };
enum { F_LABEL_KEY = 1, F_LABEL_STR = 2, F_LABEL_NUM = 3, F_LABEL_NUM_UNIT = 4 };
enum {
	F_MAPPING_ID = 1,
	F_MAPPING_MEMORY_START = 2,
	F_MAPPING_MEMORY_LIMIT = 3,
	F_MAPPING_FILE_OFFSET = 4,
	F_MAPPING_FILENAME = 5,
	F_MAPPING_BUILD_ID = 6,
	F_MAPPING_HAS_FUNCTIONS = 7,
	F_MAPPING_HAS_FILENAMES = 8,
	F_MAPPING_HAS_LINE_NUMBERS = 9,
	F_MAPPING_HAS_INLINE_FRAMES = 10,
};
enum { F_LOCATION_ID = 1, F_LOCATION_MAPPING_ID = 2, F_LOCATION_ADDRESS = 3, F_LOCATION_LINE = 4 };
enum { F_LINE_FUNCTION_ID = 1, F_LINE_LINE = 2 };
enum { F_FUNCTION_ID = 1, F_FUNCTION_NAME = 2, F_FUNCTION_SYSTEM_NAME = 3, F_FUNCTION_FILENAME = 4 };

struct enc_string {
	const char *s;
	uint32_t len;
};

struct enc_mapping {
	uint64_t start, limit, offset;
	uint32_t path, build_id; /* string indices */
	uint32_t locations, with_function, with_file, with_line, with_debug_info;
};

/* A demangled name and a copy of the symbol it was made from (after the
 * readable text's NUL), alive until its pprof_names is freed. */
struct demangled_name {
	struct demangled_name *next;
	const char *symbol; /* in text */
	char text[];
};

/* Names already made readable, by the address of the symbol name: the
 * resolver hands out one string per function, which the many pcs of a
 * function share.  A hit is confirmed against the symbol kept with it, so
 * a memo that outlives one encode (pprof_names) never answers for other
 * bytes at a reused address.  Direct-mapped. */
#define NAMES_MEMO_BITS 12u
#define NAMES_MEMO_SIZE (1u << NAMES_MEMO_BITS)
struct readable_memo {
	const char *name;
	const char *readable;
	const char *symbol; /* the copy of name kept with readable */
};

struct pprof_names {
	struct demangle_scratch *demangle; /* allocated on the first mangled name */
	char *demangled;                   /* ENC_DEMANGLED_CAP bytes, with it */
	struct demangled_name *kept;       /* readable names string tables point to */
	struct readable_memo *memo;        /* NAMES_MEMO_SIZE entries, with them */
	uint32_t made;                     /* symbols demangled into kept */
};

struct enc_function {
	uint32_t name, system_name, file; /* string indices */
};

/* One Line of a location: a function and its line (0: unknown). */
struct enc_line {
	uint32_t function_id;
	int64_t line;
};

struct enc_location {
	uint64_t pc;
	uint64_t address;
	uint32_t mapping_id; /* 0: none */
	uint32_t first_line; /* into enc.lines */
	uint32_t n_lines;    /* 0: no Line; else innermost first */
	bool own_code;       /* the profiler's own frame: not written in stacks */
};

struct enc_stack {
	uint32_t offset; /* into enc.packed */
	uint32_t len;
	bool done;
};

struct enc {
	const struct profile *p;
	sw_resolve_fn resolve;
	void *resolve_ctx;
	bool failed;

	struct enc_string *strings;
	uint32_t n_strings, cap_strings;
	struct sw_htab string_index;
	uint32_t *profile_strings; /* profile string id -> index + 1 (0: not yet) */

	struct enc_mapping *mappings;
	uint32_t n_mappings, cap_mappings;
	struct sw_htab mapping_index;

	struct enc_function *functions;
	uint32_t n_functions, cap_functions;
	struct sw_htab function_index;
	struct pprof_names *names; /* opts->names, or own_names */
	struct pprof_names own_names;

	struct enc_location *locations;
	uint32_t n_locations, cap_locations;
	struct sw_htab location_index;

	struct enc_line *lines; /* every location's lines, in order */
	uint32_t n_lines, cap_lines;

	struct enc_stack *stacks; /* by profile stack id */
	uint32_t n_stacks;
	struct rt_buf packed; /* packed location ids of every translated stack */
};

static void names_clear(struct pprof_names *n)
{
	rt_free(n->demangle);
	rt_free(n->demangled);
	rt_free(n->memo);
	while (n->kept != NULL) {
		struct demangled_name *d = n->kept;
		n->kept = d->next;
		rt_free(d);
	}
	rt_memset(n, 0, sizeof(*n));
}

struct pprof_names *pprof_names_create(void)
{
	return rt_calloc(1, sizeof(struct pprof_names));
}

void pprof_names_free(struct pprof_names *n)
{
	if (n == NULL)
		return;
	names_clear(n);
	rt_free(n);
}

uint32_t pprof_names_made(const struct pprof_names *n)
{
	return n != NULL ? n->made : 0;
}

static void enc_free(struct enc *e)
{
	rt_free(e->strings);
	sw_htab_free(&e->string_index);
	rt_free(e->profile_strings);
	rt_free(e->mappings);
	sw_htab_free(&e->mapping_index);
	rt_free(e->functions);
	sw_htab_free(&e->function_index);
	names_clear(&e->own_names);
	rt_free(e->locations);
	sw_htab_free(&e->location_index);
	rt_free(e->lines);
	rt_free(e->stacks);
	rt_buf_free(&e->packed);
}

/* ---- string table ---- */

struct string_key {
	const struct enc *e;
	const char *s;
	uint32_t len;
};

static bool string_eq(const void *ctx, uint32_t idx)
{
	const struct string_key *k = ctx;
	const struct enc_string *s = &k->e->strings[idx];
	return s->len == k->len && rt_memcmp(s->s, k->s, k->len) == 0;
}

/* Index of s (len bytes) in the string table, adding it; 0 on failure
 * (sets e->failed).  s must stay valid until the encode ends. */
static uint32_t str_index_n(struct enc *e, const char *s, uint32_t len)
{
	if (len == 0)
		return 0;
	uint32_t hash = rt_hash_fold(rt_hash_bytes(RT_HASH_SEED, s, len));
	struct string_key k = {e, s, len};
	uint32_t idx = sw_htab_lookup(&e->string_index, hash, string_eq, &k);
	if (idx != SW_HTAB_NONE)
		return idx;
	void *arr = e->strings;
	if (!sw_array_reserve(&arr, &e->cap_strings, e->n_strings + 1, sizeof(*e->strings))) {
		e->failed = true;
		return 0;
	}
	e->strings = arr;
	idx = e->n_strings;
	if (!sw_htab_insert(&e->string_index, hash, idx)) {
		e->failed = true;
		return 0;
	}
	e->strings[idx] = (struct enc_string){s, len};
	e->n_strings++;
	return idx;
}

static uint32_t str_index(struct enc *e, const char *s)
{
	if (!s)
		return 0;
	return str_index_n(e, s, (uint32_t)rt_strnlen(s, UINT32_MAX / 2));
}

/* Index of a profile-interned string, translated once per id. */
static uint32_t profile_str_index(struct enc *e, uint32_t id)
{
	if (id == 0 || id >= profile_string_count(e->p))
		return 0;
	if (e->profile_strings[id])
		return e->profile_strings[id] - 1;
	uint32_t len;
	const char *s = profile_string(e->p, id, &len);
	uint32_t idx = str_index_n(e, s, len);
	if (!e->failed)
		e->profile_strings[id] = idx + 1;
	return idx;
}

/* ---- mappings, functions, locations ---- */

struct mapping_key {
	const struct enc *e;
	uint64_t start, limit;
	uint32_t path;
};

static bool mapping_eq(const void *ctx, uint32_t idx)
{
	const struct mapping_key *k = ctx;
	const struct enc_mapping *m = &k->e->mappings[idx];
	return m->start == k->start && m->limit == k->limit && m->path == k->path;
}

/* Mapping id (1-based) of a resolved frame, 0 when it has none. */
static uint32_t mapping_id(struct enc *e, const struct sw_frame_info *fi)
{
	if (fi->map_limit <= fi->map_start)
		return 0;
	struct mapping_key k = {e, fi->map_start, fi->map_limit, str_index(e, fi->map_path)};
	uint64_t h = rt_hash_mix(rt_hash_mix(rt_hash_mix(RT_HASH_SEED, k.start), k.limit), k.path);
	uint32_t hash = rt_hash_fold(h);
	uint32_t idx = sw_htab_lookup(&e->mapping_index, hash, mapping_eq, &k);
	if (idx != SW_HTAB_NONE)
		return idx + 1;
	void *arr = e->mappings;
	if (!sw_array_reserve(&arr, &e->cap_mappings, e->n_mappings + 1, sizeof(*e->mappings))) {
		e->failed = true;
		return 0;
	}
	e->mappings = arr;
	idx = e->n_mappings;
	if (!sw_htab_insert(&e->mapping_index, hash, idx)) {
		e->failed = true;
		return 0;
	}
	e->mappings[idx] = (struct enc_mapping){
		.start = fi->map_start,
		.limit = fi->map_limit,
		.offset = fi->map_offset,
		.path = k.path,
		.build_id = str_index(e, fi->build_id),
	};
	e->n_mappings++;
	return idx + 1;
}

struct function_key {
	const struct enc *e;
	uint32_t name, file;
};

static bool function_eq(const void *ctx, uint32_t idx)
{
	const struct function_key *k = ctx;
	const struct enc_function *f = &k->e->functions[idx];
	return f->name == k->name && f->file == k->file;
}

#define ENC_DEMANGLED_CAP 4096u

/* The readable form of name, kept with a copy of name; NULL if it cannot
 * be demangled or memory ran out. */
static struct demangled_name *demangled_copy(struct pprof_names *nm, const char *name)
{
	size_t n;
	if (nm->demangled == NULL ||
	    (n = demangle(name, nm->demangled, ENC_DEMANGLED_CAP, nm->demangle)) == 0)
		return NULL;
	size_t symbol_len = rt_strlen(name);
	struct demangled_name *d = rt_malloc(sizeof(*d) + n + 1 + symbol_len + 1);
	if (d == NULL)
		return NULL;
	rt_memcpy(d->text, nm->demangled, n + 1);
	rt_memcpy(d->text + n + 1, name, symbol_len + 1);
	d->symbol = d->text + n + 1;
	d->next = nm->kept;
	nm->kept = d;
	nm->made++;
	return d;
}

/* The readable form of a symbol name: demangled (C++, Rust) when it is
 * mangled, else the name itself. */
static const char *readable_name(struct enc *e, const char *name)
{
	if (!demangle_has_prefix(name))
		return name;
	struct pprof_names *nm = e->names;
	if (nm->demangle == NULL) {
		nm->demangle = rt_malloc(sizeof(*nm->demangle));
		nm->demangled = rt_malloc(ENC_DEMANGLED_CAP);
		nm->memo = rt_calloc(NAMES_MEMO_SIZE, sizeof(*nm->memo));
		if (nm->demangle == NULL || nm->demangled == NULL)
			return name; /* stays mangled; the profile is still right */
	}
	struct readable_memo *m = NULL;
	if (nm->memo != NULL) {
		uint64_t h = (uint64_t)(uintptr_t)name * RT_HASH_MUL64;
		m = &nm->memo[h >> (64 - NAMES_MEMO_BITS)];
		if (m->name == name && (m->symbol == NULL || rt_strcmp(m->symbol, name) == 0))
			return m->readable;
	}
	struct demangled_name *d = demangled_copy(nm, name);
	const char *readable = d != NULL ? d->text : name;
	if (m != NULL && e->names == &e->own_names) {
		m->name = name;
		m->readable = readable;
		m->symbol = NULL; /* the strings do not change while one profile is encoded */
	} else if (m != NULL && d != NULL) {
		m->name = name;
		m->readable = readable;
		m->symbol = d->symbol;
	} else if (m != NULL) {
		m->name = NULL; /* stays mangled: nothing kept to confirm a hit against */
	}
	return readable;
}

/* Function id (1-based) for a symbol name and source file, 0 on failure:
 * function.name is the readable form, function.system_name the symbol. */
static uint32_t function_id(struct enc *e, const char *name, const char *file)
{
	struct function_key k = {e, str_index(e, readable_name(e, name)), str_index(e, file)};
	uint32_t hash = rt_hash_fold(rt_hash_mix(RT_HASH_SEED, ((uint64_t)k.name << 32) | k.file));
	uint32_t idx = sw_htab_lookup(&e->function_index, hash, function_eq, &k);
	if (idx != SW_HTAB_NONE)
		return idx + 1;
	void *arr = e->functions;
	if (!sw_array_reserve(&arr, &e->cap_functions, e->n_functions + 1, sizeof(*e->functions))) {
		e->failed = true;
		return 0;
	}
	e->functions = arr;
	idx = e->n_functions;
	if (!sw_htab_insert(&e->function_index, hash, idx)) {
		e->failed = true;
		return 0;
	}
	e->functions[idx] = (struct enc_function){k.name, str_index(e, name), k.file};
	e->n_functions++;
	return idx + 1;
}

struct location_key {
	const struct enc *e;
	uint64_t pc;
};

static bool location_eq(const void *ctx, uint32_t idx)
{
	const struct location_key *k = ctx;
	return k->e->locations[idx].pc == k->pc;
}

/* Appends one Line to the location being built (its lines are the last ones). */
static void add_line(struct enc *e, struct enc_location *loc, const char *function, const char *file,
		     int64_t line)
{
	uint32_t fid = function_id(e, function, file);
	void *arr = e->lines;
	if (e->failed || fid == 0 ||
	    !sw_array_reserve(&arr, &e->cap_lines, e->n_lines + 1, sizeof(*e->lines))) {
		e->failed = true;
		return;
	}
	e->lines = arr;
	if (loc->n_lines == 0)
		loc->first_line = e->n_lines;
	e->lines[e->n_lines].function_id = fid;
	e->lines[e->n_lines].line = line > 0 ? line : 0;
	e->n_lines++;
	loc->n_lines++;
}

/* Fills a new location for pc: synthetic frames get their fixed name and no
 * mapping; real ones get what the resolver knows, never a guessed name.
 * Frames inlined at pc come first, the function they were inlined into
 * last (the order pprof reads). */
static void location_resolve(struct enc *e, uint64_t pc, struct enc_location *loc)
{
	const char *synthetic = sw_synthetic_frame_name(pc);
	if (synthetic) {
		add_line(e, loc, synthetic, NULL, 0);
		return;
	}
	loc->address = pc;
	struct sw_frame_info fi;
	rt_memset(&fi, 0, sizeof(fi));
	if (!e->resolve || !e->resolve(e->resolve_ctx, pc, &fi))
		return;
	loc->own_code = fi.own_code;
	loc->mapping_id = mapping_id(e, &fi);
	bool all_files = true, all_lines = true;
	if (fi.function && fi.function[0]) {
		uint32_t n_inlined = fi.n_inlined <= SW_MAX_INLINED ? fi.n_inlined : SW_MAX_INLINED;
		for (uint32_t i = 0; i < n_inlined; i++) {
			const struct sw_inlined_frame *f = &fi.inlined[i];
			const char *name = f->function && f->function[0] ? f->function : "[inlined]";
			add_line(e, loc, name, f->file, f->line);
			all_files = all_files && f->file && f->file[0];
			all_lines = all_lines && f->line > 0;
		}
		add_line(e, loc, fi.function, fi.file, fi.line);
		all_files = all_files && fi.file && fi.file[0];
		all_lines = all_lines && fi.line > 0;
	}
	if (loc->mapping_id && !e->failed) {
		struct enc_mapping *m = &e->mappings[loc->mapping_id - 1];
		m->locations++;
		if (loc->n_lines) {
			m->with_function++;
			m->with_file += all_files;
			m->with_line += all_lines;
			m->with_debug_info += fi.debug_info;
		}
	}
}

/* Location id (1-based) of pc, resolving it the first time; 0 on failure. */
static uint32_t location_id(struct enc *e, uint64_t pc)
{
	struct location_key k = {e, pc};
	uint32_t hash = rt_hash_fold(rt_hash_mix(RT_HASH_SEED, pc));
	uint32_t idx = sw_htab_lookup(&e->location_index, hash, location_eq, &k);
	if (idx != SW_HTAB_NONE)
		return idx + 1;
	struct enc_location loc = {.pc = pc};
	location_resolve(e, pc, &loc);
	void *arr = e->locations;
	if (e->failed ||
	    !sw_array_reserve(&arr, &e->cap_locations, e->n_locations + 1, sizeof(*e->locations))) {
		e->failed = true;
		return 0;
	}
	e->locations = arr;
	idx = e->n_locations;
	if (!sw_htab_insert(&e->location_index, hash, idx)) {
		e->failed = true;
		return 0;
	}
	e->locations[idx] = loc;
	e->n_locations++;
	return idx + 1;
}

/* The packed location ids of a stack, translated on first use. */
static const struct enc_stack *stack_packed(struct enc *e, const struct profile_sample_view *v)
{
	if (v->stack_id >= e->n_stacks) {
		e->failed = true;
		return NULL;
	}
	struct enc_stack *st = &e->stacks[v->stack_id];
	if (st->done)
		return st;
	size_t start = e->packed.len;
	if (start > UINT32_MAX / 2) {
		e->failed = true;
		return NULL;
	}
	uint8_t chunk[256];
	size_t used = 0;
	/* Our own frames (a thread's start trampoline) are left out, unless
	 * nothing else would remain. */
	bool keep_own = true;
	for (uint32_t i = 0; i < v->depth && keep_own; i++) {
		uint32_t id = location_id(e, v->pcs[i]);
		if (!id)
			return NULL;
		keep_own = e->locations[id - 1].own_code;
	}
	for (uint32_t i = 0; i < v->depth; i++) {
		uint32_t id = location_id(e, v->pcs[i]);
		if (!id)
			return NULL;
		if (e->locations[id - 1].own_code && !keep_own)
			continue;
		used += pb_encode_varint(chunk + used, id);
		if (used > sizeof(chunk) - 10) {
			rt_buf_append(&e->packed, chunk, used);
			used = 0;
		}
	}
	rt_buf_append(&e->packed, chunk, used);
	if (e->packed.failed) {
		e->failed = true;
		return NULL;
	}
	st->offset = (uint32_t)start;
	st->len = (uint32_t)(e->packed.len - start);
	st->done = true;
	return st;
}

/* ---- writing messages ---- */

static size_t value_type_size(uint32_t type, uint32_t unit)
{
	size_t n = 0;
	if (type)
		n += pb_uint_field_size(F_VALUE_TYPE_TYPE, type);
	if (unit)
		n += pb_uint_field_size(F_VALUE_TYPE_UNIT, unit);
	return n;
}

static void put_value_type(struct rt_buf *out, uint32_t field, uint32_t type, uint32_t unit)
{
	pb_put_len_header(out, field, value_type_size(type, unit));
	if (type)
		pb_put_uint(out, F_VALUE_TYPE_TYPE, type);
	if (unit)
		pb_put_uint(out, F_VALUE_TYPE_UNIT, unit);
}

/* A label with its string indices already translated. */
struct enc_label {
	uint32_t key, str, num_unit;
	bool is_num;
	int64_t num;
};

static size_t label_size(const struct enc_label *l)
{
	size_t n = 0;
	if (l->key)
		n += pb_uint_field_size(F_LABEL_KEY, l->key);
	if (!l->is_num) {
		if (l->str)
			n += pb_uint_field_size(F_LABEL_STR, l->str);
		return n;
	}
	if (l->num)
		n += pb_uint_field_size(F_LABEL_NUM, (uint64_t)l->num);
	if (l->num_unit)
		n += pb_uint_field_size(F_LABEL_NUM_UNIT, l->num_unit);
	return n;
}

/* Writes a whole Label field into dst (room for 70 bytes). */
static size_t encode_label(uint8_t *dst, const struct enc_label *l)
{
	size_t n = pb_encode_len_header(dst, F_SAMPLE_LABEL, label_size(l));
	if (l->key)
		n += pb_encode_uint_field(dst + n, F_LABEL_KEY, l->key);
	if (!l->is_num) {
		if (l->str)
			n += pb_encode_uint_field(dst + n, F_LABEL_STR, l->str);
		return n;
	}
	if (l->num)
		n += pb_encode_uint_field(dst + n, F_LABEL_NUM, (uint64_t)l->num);
	if (l->num_unit)
		n += pb_encode_uint_field(dst + n, F_LABEL_NUM_UNIT, l->num_unit);
	return n;
}

static void put_sample(struct enc *e, struct rt_buf *out, const struct profile_sample_view *v,
		       const uint8_t *slots, uint32_t n_slots)
{
	const struct enc_stack *st = stack_packed(e, v);
	if (!st)
		return;
	struct enc_label labels[SW_MAX_LABELS];
	uint32_t n_labels = RT_MIN(v->n_labels, (uint32_t)SW_MAX_LABELS);
	size_t labels_size = 0;
	for (uint32_t i = 0; i < n_labels; i++) {
		const struct profile_label *pl = &v->labels[i];
		labels[i] = (struct enc_label){
			.key = profile_str_index(e, pl->key),
			.str = pl->is_num ? 0 : profile_str_index(e, pl->str),
			.num_unit = pl->is_num ? profile_str_index(e, pl->num_unit) : 0,
			.is_num = pl->is_num,
			.num = pl->num,
		};
		labels_size += pb_len_field_size(F_SAMPLE_LABEL, label_size(&labels[i]));
	}
	size_t values_len = 0;
	for (uint32_t i = 0; i < n_slots; i++)
		values_len += pb_varint_size((uint64_t)v->values[slots[i]]);
	size_t size = pb_len_field_size(F_SAMPLE_VALUE, values_len) + labels_size;
	if (st->len)
		size += pb_len_field_size(F_SAMPLE_LOCATION_ID, st->len);

	/* Values and labels are small and bounded: assemble them in scratch
	 * (at most 20 + 13 * 10 + 16 * 70 bytes) and append once. */
	uint8_t scratch[1280];
	size_t n = pb_encode_len_header(scratch, F_PROFILE_SAMPLE, size);
	if (st->len)
		n += pb_encode_len_header(scratch + n, F_SAMPLE_LOCATION_ID, st->len);
	rt_buf_append(out, scratch, n);
	if (st->len)
		rt_buf_append(out, e->packed.data + st->offset, st->len);
	n = pb_encode_len_header(scratch, F_SAMPLE_VALUE, values_len);
	for (uint32_t i = 0; i < n_slots; i++)
		n += pb_encode_varint(scratch + n, (uint64_t)v->values[slots[i]]);
	for (uint32_t i = 0; i < n_labels; i++)
		n += encode_label(scratch + n, &labels[i]);
	rt_buf_append(out, scratch, n);
}

static void put_mapping(struct rt_buf *out, uint32_t id, const struct enc_mapping *m)
{
	/* Claim symbolization only when every location of the mapping got a
	 * name: tools skip re-symbolizing a mapping that has_functions. */
	bool has_functions = m->locations && m->with_function == m->locations;
	bool has_filenames = has_functions && m->with_file == m->locations;
	bool has_lines = has_functions && m->with_line == m->locations;
	/* Inlined frames were looked for at every location (debug information). */
	bool has_inline = has_functions && m->with_debug_info == m->locations;
	size_t size = pb_uint_field_size(F_MAPPING_ID, id);
	if (m->start)
		size += pb_uint_field_size(F_MAPPING_MEMORY_START, m->start);
	if (m->limit)
		size += pb_uint_field_size(F_MAPPING_MEMORY_LIMIT, m->limit);
	if (m->offset)
		size += pb_uint_field_size(F_MAPPING_FILE_OFFSET, m->offset);
	if (m->path)
		size += pb_uint_field_size(F_MAPPING_FILENAME, m->path);
	if (m->build_id)
		size += pb_uint_field_size(F_MAPPING_BUILD_ID, m->build_id);
	if (has_functions)
		size += pb_uint_field_size(F_MAPPING_HAS_FUNCTIONS, 1);
	if (has_filenames)
		size += pb_uint_field_size(F_MAPPING_HAS_FILENAMES, 1);
	if (has_lines)
		size += pb_uint_field_size(F_MAPPING_HAS_LINE_NUMBERS, 1);
	if (has_inline)
		size += pb_uint_field_size(F_MAPPING_HAS_INLINE_FRAMES, 1);

	pb_put_len_header(out, F_PROFILE_MAPPING, size);
	pb_put_uint(out, F_MAPPING_ID, id);
	if (m->start)
		pb_put_uint(out, F_MAPPING_MEMORY_START, m->start);
	if (m->limit)
		pb_put_uint(out, F_MAPPING_MEMORY_LIMIT, m->limit);
	if (m->offset)
		pb_put_uint(out, F_MAPPING_FILE_OFFSET, m->offset);
	if (m->path)
		pb_put_uint(out, F_MAPPING_FILENAME, m->path);
	if (m->build_id)
		pb_put_uint(out, F_MAPPING_BUILD_ID, m->build_id);
	if (has_functions)
		pb_put_uint(out, F_MAPPING_HAS_FUNCTIONS, 1);
	if (has_filenames)
		pb_put_uint(out, F_MAPPING_HAS_FILENAMES, 1);
	if (has_lines)
		pb_put_uint(out, F_MAPPING_HAS_LINE_NUMBERS, 1);
	if (has_inline)
		pb_put_uint(out, F_MAPPING_HAS_INLINE_FRAMES, 1);
}

static size_t line_size(const struct enc_line *l)
{
	size_t n = pb_uint_field_size(F_LINE_FUNCTION_ID, l->function_id);
	if (l->line)
		n += pb_uint_field_size(F_LINE_LINE, (uint64_t)l->line);
	return n;
}

static void put_location(struct rt_buf *out, uint32_t id, const struct enc_location *l,
			 const struct enc_line *lines)
{
	size_t size = pb_uint_field_size(F_LOCATION_ID, id);
	if (l->mapping_id)
		size += pb_uint_field_size(F_LOCATION_MAPPING_ID, l->mapping_id);
	if (l->address)
		size += pb_uint_field_size(F_LOCATION_ADDRESS, l->address);
	for (uint32_t i = 0; i < l->n_lines; i++)
		size += pb_len_field_size(F_LOCATION_LINE, line_size(&lines[l->first_line + i]));

	pb_put_len_header(out, F_PROFILE_LOCATION, size);
	pb_put_uint(out, F_LOCATION_ID, id);
	if (l->mapping_id)
		pb_put_uint(out, F_LOCATION_MAPPING_ID, l->mapping_id);
	if (l->address)
		pb_put_uint(out, F_LOCATION_ADDRESS, l->address);
	for (uint32_t i = 0; i < l->n_lines; i++) {
		const struct enc_line *ln = &lines[l->first_line + i];
		pb_put_len_header(out, F_LOCATION_LINE, line_size(ln));
		pb_put_uint(out, F_LINE_FUNCTION_ID, ln->function_id);
		if (ln->line)
			pb_put_int64(out, F_LINE_LINE, ln->line);
	}
}

static void put_function(struct rt_buf *out, uint32_t id, const struct enc_function *f)
{
	size_t size = pb_uint_field_size(F_FUNCTION_ID, id);
	if (f->name)
		size += pb_uint_field_size(F_FUNCTION_NAME, f->name);
	if (f->system_name)
		size += pb_uint_field_size(F_FUNCTION_SYSTEM_NAME, f->system_name);
	if (f->file)
		size += pb_uint_field_size(F_FUNCTION_FILENAME, f->file);

	pb_put_len_header(out, F_PROFILE_FUNCTION, size);
	pb_put_uint(out, F_FUNCTION_ID, id);
	if (f->name)
		pb_put_uint(out, F_FUNCTION_NAME, f->name);
	if (f->system_name)
		pb_put_uint(out, F_FUNCTION_SYSTEM_NAME, f->system_name);
	if (f->file)
		pb_put_uint(out, F_FUNCTION_FILENAME, f->file);
}

/* comment = repeated int64, written packed (the proto3 default). */
static void put_comments(struct rt_buf *out, const uint32_t *idx, uint32_t n)
{
	if (n == 0)
		return;
	size_t len = 0;
	for (uint32_t i = 0; i < n; i++)
		len += pb_varint_size(idx[i]);
	pb_put_len_header(out, F_PROFILE_COMMENT, len);
	for (uint32_t i = 0; i < n; i++)
		pb_put_varint(out, idx[i]);
}

void pprof_opts_for_kind(struct pprof_opts *o, enum sw_kind kind, int64_t period)
{
	rt_memset(o, 0, sizeof(*o));
	o->period_slot = (int)sw_kind_main_slot(kind);
	o->period = period;
	o->default_slot = o->period_slot;
}

#define MAX_COMMENTS 64 /* opts->comments plus the recorder notes */
#define MAX_NOTES 3 /* the recorder's overflow, dropped-label and timeline notes */
#define COMMENT_BYTES 160

static const char *type_name(const struct pprof_opts *o, uint32_t slot)
{
	if (o->type_names && o->type_names[slot])
		return o->type_names[slot];
	return sw_value_type_name((enum sw_value_slot)slot);
}

static const char *unit_name(const struct pprof_opts *o, uint32_t slot)
{
	if (o->unit_names && o->unit_names[slot])
		return o->unit_names[slot];
	return sw_value_unit_name((enum sw_value_slot)slot);
}

static bool slot_valid(int slot, uint32_t mask, bool must_be_selected)
{
	if (slot == PPROF_NO_SLOT)
		return true;
	if (slot < 0 || slot >= SW_V_COUNT)
		return false;
	return !must_be_selected || (mask & SW_V_BIT((uint32_t)slot));
}

/* Makes the mapping holding main_pc, if any, mapping 1: swaps it with the
 * first mapping found, in the table and in the locations' references. */
static void main_mapping_first(struct enc *e, uint64_t main_pc)
{
	if (main_pc == 0)
		return;
	uint32_t k = 0;
	while (k < e->n_mappings && !(main_pc >= e->mappings[k].start && main_pc < e->mappings[k].limit))
		k++;
	if (k == 0 || k == e->n_mappings)
		return;
	struct enc_mapping first = e->mappings[0];
	e->mappings[0] = e->mappings[k];
	e->mappings[k] = first;
	for (uint32_t i = 0; i < e->n_locations; i++) {
		uint32_t *id = &e->locations[i].mapping_id;
		if (*id == 1)
			*id = k + 1;
		else if (*id == k + 1)
			*id = 1;
	}
}

/* Writes everything but samples, once the samples loop has discovered
 * every location, function, mapping and string. */
static void put_tables(struct enc *e, struct rt_buf *out, const struct pprof_opts *o,
		       char (*notes)[COMMENT_BYTES], uint32_t n_notes)
{
	main_mapping_first(e, o->main_pc);
	for (uint32_t i = 0; i < e->n_mappings; i++)
		put_mapping(out, i + 1, &e->mappings[i]);
	for (uint32_t i = 0; i < e->n_locations; i++)
		put_location(out, i + 1, &e->locations[i], e->lines);
	for (uint32_t i = 0; i < e->n_functions; i++)
		put_function(out, i + 1, &e->functions[i]);

	uint32_t drop = str_index(e, o->drop_frames);
	uint32_t keep = str_index(e, o->keep_frames);
	uint32_t doc = str_index(e, o->doc_url);
	uint32_t period_type = 0, period_unit = 0, default_type = 0;
	if (o->period_slot != PPROF_NO_SLOT) {
		period_type = str_index(e, type_name(o, (uint32_t)o->period_slot));
		period_unit = str_index(e, unit_name(o, (uint32_t)o->period_slot));
	}
	if (o->default_slot != PPROF_NO_SLOT)
		default_type = str_index(e, type_name(o, (uint32_t)o->default_slot));
	uint32_t comments[MAX_COMMENTS];
	uint32_t n_comments = 0;
	for (uint32_t i = 0; i < o->n_comments && n_comments < MAX_COMMENTS - MAX_NOTES - 1; i++)
		comments[n_comments++] = str_index(e, o->comments[i]);
	char late[PPROF_LATE_COMMENT_CAP]; /* alive until the string table is written below */
	if (o->late_comment != NULL && o->late_comment(late, sizeof(late)) > 0)
		comments[n_comments++] = str_index(e, late);
	for (uint32_t i = 0; i < n_notes && n_comments < MAX_COMMENTS; i++)
		comments[n_comments++] = str_index(e, notes[i]);

	struct profile_stats st;
	profile_get_stats(e->p, &st);
	if (drop)
		pb_put_uint(out, F_PROFILE_DROP_FRAMES, drop);
	if (keep)
		pb_put_uint(out, F_PROFILE_KEEP_FRAMES, keep);
	if (st.start_ns)
		pb_put_uint(out, F_PROFILE_TIME_NANOS, st.start_ns);
	if (st.end_ns > st.start_ns)
		pb_put_uint(out, F_PROFILE_DURATION_NANOS, st.end_ns - st.start_ns);
	if (o->period_slot != PPROF_NO_SLOT)
		put_value_type(out, F_PROFILE_PERIOD_TYPE, period_type, period_unit);
	if (o->period)
		pb_put_int64(out, F_PROFILE_PERIOD, o->period);
	put_comments(out, comments, n_comments);
	if (default_type)
		pb_put_uint(out, F_PROFILE_DEFAULT_SAMPLE_TYPE, default_type);
	if (doc)
		pb_put_uint(out, F_PROFILE_DOC_URL, doc);

	/* The string table last: index 0 is the empty string. */
	for (uint32_t i = 0; i < e->n_strings && !e->failed; i++)
		pb_put_bytes(out, F_PROFILE_STRING_TABLE, e->strings[i].s, e->strings[i].len);
}

static bool enc_init(struct enc *e, const struct profile *p)
{
	e->n_stacks = profile_stack_count(p);
	e->stacks = rt_calloc(e->n_stacks, sizeof(*e->stacks));
	e->profile_strings = rt_calloc(profile_string_count(p), sizeof(*e->profile_strings));
	if (!e->stacks || !e->profile_strings)
		return false;
	/* string_table[0] = "" */
	void *arr = NULL;
	if (!sw_array_reserve(&arr, &e->cap_strings, 64, sizeof(*e->strings)))
		return false;
	e->strings = arr;
	e->strings[0] = (struct enc_string){"", 0};
	e->n_strings = 1;
	return true;
}

int pprof_encode(const struct profile *p, uint32_t slot_mask, const struct pprof_opts *o,
		 sw_resolve_fn resolve, void *resolve_ctx, struct rt_buf *out)
{
	if (!p || !o || !out || !slot_mask || (slot_mask & ~SW_V_ALL) ||
	    !slot_valid(o->period_slot, slot_mask, false) ||
	    !slot_valid(o->default_slot, slot_mask, true))
		return -EINVAL;

	struct enc e;
	rt_memset(&e, 0, sizeof(e));
	e.p = p;
	e.resolve = resolve;
	e.resolve_ctx = resolve_ctx;
	e.names = o->names != NULL ? o->names : &e.own_names;
	if (!enc_init(&e, p)) {
		enc_free(&e);
		return -ENOMEM;
	}

	uint8_t slots[SW_V_COUNT];
	uint32_t n_slots = 0;
	for (uint32_t s = 0; s < SW_V_COUNT; s++) {
		if (slot_mask & SW_V_BIT(s))
			slots[n_slots++] = (uint8_t)s;
	}
	for (uint32_t i = 0; i < n_slots; i++) {
		uint32_t type = str_index(&e, type_name(o, slots[i]));
		uint32_t unit = str_index(&e, unit_name(o, slots[i]));
		put_value_type(out, F_PROFILE_SAMPLE_TYPE, type, unit);
	}

	uint32_t n_samples = profile_sample_count(p);
	struct profile_sample_view v;
	for (uint32_t i = 0; i < n_samples && !e.failed && !out->failed; i++) {
		if (!profile_sample_get(p, i, &v))
			break;
		bool any = false;
		for (uint32_t k = 0; k < n_slots; k++)
			any = any || v.values[slots[k]] != 0;
		if (any)
			put_sample(&e, out, &v, slots, n_slots);
	}

	struct profile_stats st;
	profile_get_stats(p, &st);
	char notes[MAX_NOTES][COMMENT_BYTES];
	uint32_t n_notes = 0;
	if (st.overflowed_adds)
		rt_snprintf(notes[n_notes++], COMMENT_BYTES,
			    "stowaway: %llu samples exceeded the recorder bounds and were merged into [overflow]",
			    (unsigned long long)st.overflowed_adds);
	if (st.dropped_labels)
		rt_snprintf(notes[n_notes++], COMMENT_BYTES,
			    "stowaway: %llu labels beyond %u per sample were dropped",
			    (unsigned long long)st.dropped_labels, (unsigned)SW_MAX_LABELS);
	if (st.timeline_dropped)
		rt_snprintf(notes[n_notes++], COMMENT_BYTES,
			    "stowaway: %llu samples carry no end_timestamp_ns (the timeline's %u "
			    "samples per period were spent)",
			    (unsigned long long)st.timeline_dropped, (unsigned)st.timeline_samples);
	if (!e.failed)
		put_tables(&e, out, o, notes, n_notes);

	int rc = (e.failed || out->failed) ? -ENOMEM : 0;
	enc_free(&e);
	return rc;
}
