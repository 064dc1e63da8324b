/* pprof (perftools.profiles.Profile) decoding and encoding for the CLI.
 *
 * The decoder trusts nothing: every length, index and id is checked, and a
 * malformed, truncated or inconsistent profile returns -1 with cli_err set.
 * Ids are resolved to array indexes after decoding, so users of a decoded
 * profile never look anything up by id. */
#ifndef STOWAWAY_CLI_PPROF_H
#define STOWAWAY_CLI_PPROF_H

#include <stddef.h>
#include <stdint.h>

/* Decompressed profiles larger than this are refused. */
#define PPROF_MAX_DECODED ((size_t)1 << 30)

/* String fields are indexes into pp_profile.strings, checked in range. */
struct pp_value_type {
	uint64_t type;
	uint64_t unit;
};

struct pp_label {
	uint64_t key;
	uint64_t str; /* 0 when the label is numeric */
	int64_t num;
	uint64_t num_unit;
};

struct pp_sample {
	/* Location ids as decoded, replaced by indexes into
	 * pp_profile.locations once resolved; leaf first. */
	uint64_t *locations;
	size_t n_locations;
	int64_t *values; /* one per sample type */
	struct pp_label *labels;
	size_t n_labels;
};

struct pp_line {
	uint64_t function; /* function id, then index into pp_profile.functions */
	int64_t line;
};

struct pp_mapping {
	uint64_t id;
	uint64_t memory_start, file_offset;
	uint64_t filename;
	uint64_t build_id; /* string index */
};

struct pp_location {
	uint64_t id;
	uint64_t mapping_id; /* 0: none; once resolved, index into mappings + 1 */
	uint64_t address;
	struct pp_line *lines; /* lines[0] is the innermost (inlined) frame */
	size_t n_lines;
};

struct pp_function {
	uint64_t id;
	uint64_t name;
	uint64_t system_name;
	uint64_t filename;
	int64_t start_line;
};

struct pp_profile {
	struct pp_value_type *sample_types;
	size_t n_sample_types;
	struct pp_sample *samples;
	size_t n_samples;
	struct pp_mapping *mappings;
	size_t n_mappings;
	struct pp_location *locations;
	size_t n_locations;
	struct pp_function *functions;
	size_t n_functions;
	char **strings; /* NUL-terminated copies; strings[0] is "" */
	size_t *string_lens;
	size_t n_strings;
	int64_t time_nanos;
	int64_t duration_nanos;
	struct pp_value_type period_type;
	int64_t period;
	uint64_t default_sample_type;
	uint64_t *comments; /* string indexes, checked in range */
	size_t n_comments;
};

/* Decodes raw (uncompressed) protobuf bytes. On failure *p is left empty. */
int pprof_decode(const unsigned char *data, size_t len, struct pp_profile *p);
/* The uncompressed protobuf of gzip-compressed or raw profile bytes, appended to *raw. */
struct cli_buf;
int pprof_raw_bytes(const unsigned char *data, size_t len, struct cli_buf *raw);
/* Decodes gzip-compressed or raw profile bytes. */
int pprof_decode_any(const unsigned char *data, size_t len, struct pp_profile *p);
void pprof_free(struct pp_profile *p);

/* A string of the profile by index (indexes were validated by the decoder). */
const char *pp_str(const struct pp_profile *p, uint64_t index);

/* What changed in a decoded profile since it was decoded from `raw`. */
struct pp_rewrite {
	size_t old_strings, old_functions;      /* counts at decode time: the rest are new */
	const unsigned char *location_changed;  /* by location index */
	const unsigned char *mapping_flags;     /* by mapping index: bits 0..3 = has_functions,
						 * has_filenames, has_line_numbers, has_inline_frames */
};
/* Writes raw (the protobuf p was decoded from) with the changed locations
 * re-encoded, flags set on mappings, and new functions and strings appended;
 * every other field is copied as it was. */
int pprof_rewrite(const unsigned char *raw, size_t len, const struct pp_profile *p,
		  const struct pp_rewrite *rw, struct cli_buf *out);

/* Encodes one-sample-type profiles from stacks of names: used by `convert`.
 * stacks: n_stacks stacks, each frames[0..depth) leaf first. */
struct pp_encoder;
struct pp_encoder *pp_encoder_new(const char *type, const char *unit, int64_t time_nanos);
void pp_encoder_add(struct pp_encoder *e, const char *const *frames_leaf_first, size_t depth,
		    int64_t value);
/* Serialises into *out (gzip-compressed when compress is nonzero) and frees
 * the encoder. */
struct cli_buf;
void pp_encoder_finish(struct pp_encoder *e, int compress, struct cli_buf *out);

#endif
