/* The pprof encoder: a recorded profile (profile/profile.h) to the
 * uncompressed protobuf of perftools.profiles.Profile
 * (shared/docs/pprof-facts.md beside the repository), for a chosen set of value slots.
 *
 * One call per output: a kind's file selects that kind's slots
 * (sw_kind_value_mask), the "combined" upload selects every enabled slot.
 * Samples whose selected values are all zero are left out.  Symbolization is
 * a callback (its types in symbols/frame.h), so the encoder links without
 * the symbols module.  Only
 * rt_* memory is used; ids and strings are deduplicated with hash tables, so
 * the cost is linear in the profile's size.
 */
#ifndef STOWAWAY_ENCODE_PPROF_H
#define STOWAWAY_ENCODE_PPROF_H

#include "profile/profile.h"
#include "symbols/frame.h"

#define PPROF_NO_SLOT (-1)

/* Readable names kept across encodes: the profiles of one export (one per
 * kind, the combined one, Pyroscope's) share most of their functions, so
 * with one pprof_names each mangled symbol is demangled once per export,
 * not once per profile.  A name is found again by the symbol's address and
 * confirmed by its bytes, so the symbol strings need not outlive an encode.
 * Readable texts live until pprof_names_free. */
struct pprof_names;
struct pprof_names *pprof_names_create(void); /* NULL: out of memory */
void pprof_names_free(struct pprof_names *n);  /* NULL: nothing */
/* How many symbols were demangled into n (each once while n lives). */
uint32_t pprof_names_made(const struct pprof_names *n);

struct pprof_opts {
	/* period_type = the slot's type/unit (e.g. cpu-time/nanoseconds), or PPROF_NO_SLOT. */
	int period_slot;
	int64_t period;       /* e.g. 1e9/hz for cpu and wall, the sampling mean for alloc */
	int default_slot;     /* default_sample_type, or PPROF_NO_SLOT */
	const char *drop_frames; /* regexes for tools; NULL or "": unset */
	const char *keep_frames;
	const char *doc_url;
	const char *const *comments; /* extra comment lines (the first 60 are kept) */
	uint32_t n_comments;
	/* Other names for the value types, indexed by slot (NULL, or a NULL
	 * entry: sw_value_type_name/sw_value_unit_name), used for sample_type,
	 * period_type and default_sample_type alike. */
	const char *const *type_names;
	const char *const *unit_names;
	/* Names shared with other encodes (see pprof_names), or NULL: this
	 * encode demangles into a memo of its own. */
	struct pprof_names *names;
	/* An address in the main program's code, or 0: the mapping holding it,
	 * if a location uses it, is written first (profile.proto: mapping[0]
	 * is the main binary; go tool pprof names the profile after it). */
	uint64_t main_pc;
	/* NULL, or writes one more comment line (at most PPROF_LATE_COMMENT_CAP
	 * bytes with its NUL) once every location is resolved, after
	 * `comments`: counts that resolving this profile changes (the symbol
	 * registry's lookups deferred by the CPU cap). */
	size_t (*late_comment)(char *buf, size_t cap);
};
#define PPROF_LATE_COMMENT_CAP 512u

/* Options for one kind's file: period type = the kind's main slot with the
 * given period, default sample type = the same slot, nothing else set. */
void pprof_opts_for_kind(struct pprof_opts *o, enum sw_kind kind, int64_t period);

/* Appends the encoded profile to out.  slot_mask: SW_V_BIT()s, non-empty.
 * The profile must be detached (no concurrent profile_add).  resolve is
 * called once per distinct pc, on this thread, and may be NULL (no
 * symbols).  Comments also report samples merged into "[overflow]" and
 * labels dropped by the recorder.  Returns 0, -EINVAL (bad mask or
 * options) or -ENOMEM (out is then unusable). */
int pprof_encode(const struct profile *p, uint32_t slot_mask, const struct pprof_opts *o,
		 sw_resolve_fn resolve, void *resolve_ctx, struct rt_buf *out);

#endif
