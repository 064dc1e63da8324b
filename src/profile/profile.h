/* Profiles in memory: the value slots every collector writes, the
 * aggregated profile of one period, and the thread-safe recorder that
 * collectors feed.
 *
 * Shape of the data flow: collectors (the sampler thread draining signal
 * buffers, the wall sampler, malloc hooks on application threads) call
 * recorder_add().  Identical (stack, labels) pairs are aggregated by summing
 * their values; strings are interned once and stacks deduplicated.  At each
 * period the scheduler calls recorder_swap(), which hands back the finished
 * profile in O(1) while writers keep adding to a fresh one; the finished
 * profile is then detached (single-threaded: profile_add() may still append,
 * e.g. the heap collector's live-set snapshot), encoded (encode/pprof.h) and
 * released.
 *
 * Memory is bounded by struct profile_limits.  A sample that would exceed a
 * bound is merged into ONE overflow sample (stack "[overflow]", no labels),
 * so totals stay true; the number of such merges is counted, returned to the
 * caller and written into the encoded profile's comments.
 *
 * Nothing here may be called from a signal handler (it allocates and locks).
 */
#ifndef STOWAWAY_PROFILE_H
#define STOWAWAY_PROFILE_H

#include "rt/rt.h"
#include "config/config.h"

/* One enum of value slots for the whole process.  A sample carries values
 * for any subset; an encoded pprof selects slots with a bit mask. */
enum sw_value_slot {
	SW_V_CPU_SAMPLES = 0,   /* cpu-samples/count */
	SW_V_CPU_TIME,          /* cpu-time/nanoseconds */
	SW_V_WALL_SAMPLES,      /* wall-samples/count */
	SW_V_WALL_TIME,         /* wall-time/nanoseconds */
	SW_V_ALLOC_SAMPLES,     /* alloc-samples/count */
	SW_V_ALLOC_SPACE,       /* alloc-space/bytes */
	SW_V_HEAP_LIVE_SAMPLES, /* heap-live-samples/count */
	SW_V_HEAP_LIVE_SIZE,    /* heap-live-size/bytes */
	SW_V_LOCK_ACQUIRE,      /* lock-acquire/count */
	SW_V_LOCK_ACQUIRE_WAIT, /* lock-acquire-wait/nanoseconds */
	SW_V_LOCK_RELEASE,      /* lock-release/count */
	SW_V_LOCK_RELEASE_HOLD, /* lock-release-hold/nanoseconds */
	SW_V_EXCEPTION_SAMPLES, /* exception-samples/count */
	SW_V_COUNT
};
#define SW_V_BIT(slot) (1u << (slot))
#define SW_V_ALL ((1u << SW_V_COUNT) - 1u)

/* pprof ValueType names of a slot, exactly as the Datadog backend expects. */
const char *sw_value_type_name(enum sw_value_slot slot);
const char *sw_value_unit_name(enum sw_value_slot slot);
/* Slots a profile kind is made of (e.g. cpu -> cpu-samples | cpu-time). */
uint32_t sw_kind_value_mask(enum sw_kind kind);
/* The slot tools show first for a kind (cpu -> cpu-time, alloc -> alloc-space). */
enum sw_value_slot sw_kind_main_slot(enum sw_kind kind);

/* Program counters below SW_PC_SYNTHETIC_LIMIT are not addresses but
 * synthetic frames with fixed names (no code lives in the first page). */
#define SW_PC_UNKNOWN 1   /* "[unknown]": the unwinder found no frame at all */
#define SW_PC_TRUNCATED 2 /* "[truncated]": the stack was cut at the frame limit */
#define SW_PC_OVERFLOW 3  /* "[overflow]": the recorder's memory bound was exceeded */
#define SW_PC_TRIMMED 4   /* "[trimmed]": small stacks merged to fit a server's limits */
/* "[unsampled]": CPU time a thread used after the last timer signal it was
 * sent, counted when it ended (collect/cpu.h) */
#define SW_PC_UNSAMPLED 5
#define SW_PC_SYNTHETIC_LIMIT 16
/* Name of a synthetic frame, or NULL when pc is a real address. */
const char *sw_synthetic_frame_name(uint64_t pc);

/* Label keys used by the collectors (pprof-facts.md); any other key is a
 * custom string label. */
#define SW_LABEL_THREAD_ID "thread id"                 /* num */
#define SW_LABEL_THREAD_NAME "thread name"             /* str */
#define SW_LABEL_STATE "state"                         /* str */
#define SW_LABEL_LOCAL_ROOT_SPAN_ID "local root span id" /* num, nonzero */
#define SW_LABEL_SPAN_ID "span id"                     /* num */
#define SW_LABEL_TRACE_ENDPOINT "trace endpoint"       /* str */
#define SW_LABEL_TRACE_ID "trace_id"                   /* str, 32 hex digits (OpenTelemetry) */
#define SW_LABEL_EXCEPTION_TYPE "exception type"       /* str */
#define SW_LABEL_LOCK_NAME "lock name"                 /* str */
/* Timeline: when the sample was recorded, nanoseconds since the epoch (num). */
#define SW_LABEL_END_TIMESTAMP "end_timestamp_ns"

/* A label as a collector passes it: str != NULL makes a string label,
 * otherwise num (with num_unit, NULL or "" for none) is used. */
struct sw_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

struct sw_value {
	enum sw_value_slot slot;
	int64_t value;
};

/* One sample in: pcs are leaf first, return addresses already adjusted by
 * the unwinder.  Values are sparse (slot, value) pairs; a slot may repeat
 * (the values add up). */
struct sw_sample {
	const uint64_t *pcs;
	uint32_t depth;
	const struct sw_value *values;
	uint32_t n_values;
	const struct sw_label *labels;
	uint32_t n_labels;
};

/* Labels kept per sample; more are dropped (and counted). */
#define SW_MAX_LABELS 16

/* Bounds of one profile.  A zero field takes the default. */
struct profile_limits {
	uint32_t max_samples;      /* distinct (stack, labels) pairs; default 65536 */
	uint32_t max_string_bytes; /* interned label strings; default 1 MiB */
	uint32_t max_frames;       /* frames stored over all distinct stacks; default 2 Mi */
	uint32_t max_depth;        /* frames per stack, deeper ones are cut; default 1024 */
	/* Timeline: a sample with a value in timeline_slots gets an
	 * "end_timestamp_ns" label (CLOCK_REALTIME when it is added, never
	 * before the profile's start), making it a sample of its own.  At most
	 * max_timeline_samples such samples are stored per profile; later adds
	 * aggregate without a timestamp (counted).  0: no timeline. */
	uint32_t timeline_slots;
	uint32_t max_timeline_samples;
};
#define PROFILE_DEFAULT_MAX_SAMPLES 65536u
#define PROFILE_DEFAULT_MAX_STRING_BYTES (1u << 20)
#define PROFILE_DEFAULT_MAX_FRAMES (2u << 20)
#define PROFILE_DEFAULT_MAX_DEPTH 1024u

enum profile_add_result {
	PROFILE_ADD_OK = 0,
	/* Accounted in the overflow sample (bound reached or memory exhausted). */
	PROFILE_ADD_OVERFLOW,
	/* Rejected: a value slot out of range or NULL pcs with depth > 0. */
	PROFILE_ADD_INVALID
};

struct profile;

/* An empty profile (start time = now, CLOCK_REALTIME); NULL if out of memory. */
struct profile *profile_create(const struct profile_limits *limits);
/* Aggregates one sample.  Single-threaded: only for a profile that no other
 * thread can see (detached by recorder_swap, or never attached). */
enum profile_add_result profile_add(struct profile *p, const struct sw_sample *s);
void profile_release(struct profile *p);

struct profile_stats {
	uint32_t samples;         /* distinct (stack, labels) pairs stored */
	uint32_t stacks;          /* distinct stacks stored */
	uint32_t frames;          /* frames stored over all distinct stacks */
	uint32_t strings;         /* interned strings, including "" */
	uint32_t string_bytes;    /* their bytes */
	uint64_t overflowed_adds; /* adds merged into the overflow sample */
	uint64_t dropped_labels;  /* labels beyond SW_MAX_LABELS */
	uint32_t timeline_samples; /* samples stored with an end_timestamp_ns label */
	uint64_t timeline_dropped; /* adds that got no timestamp (budget spent) */
	uint64_t memory_bytes;    /* bytes this profile holds from rt_malloc */
	uint64_t start_ns;        /* CLOCK_REALTIME */
	uint64_t end_ns;          /* CLOCK_REALTIME; 0 while still recording */
};
void profile_get_stats(const struct profile *p, struct profile_stats *out);
/* Overrides the period bounds (tests, or a profile built after the fact). */
void profile_set_times(struct profile *p, uint64_t start_ns, uint64_t end_ns);

/* ---- read access for the encoder (string ids are profile-local) ---- */
struct profile_label {
	uint32_t key;      /* string id */
	uint32_t str;      /* string id when !is_num */
	uint32_t num_unit; /* string id (0: none) when is_num */
	bool is_num;
	int64_t num;
};

struct profile_sample_view {
	uint32_t stack_id; /* dense, < profile_stack_count() */
	const uint64_t *pcs;
	uint32_t depth;
	const struct profile_label *labels;
	uint32_t n_labels;
	int64_t values[SW_V_COUNT];
};

/* Samples are numbered 0..count-1 (the overflow sample, when used, last). */
uint32_t profile_sample_count(const struct profile *p);
bool profile_sample_get(const struct profile *p, uint32_t i, struct profile_sample_view *out);
uint32_t profile_stack_count(const struct profile *p);
/* Interned strings: id 0 is "". */
uint32_t profile_string_count(const struct profile *p);
const char *profile_string(const struct profile *p, uint32_t id, uint32_t *len);

/* ---- the recorder: a profile being written by many threads ---- */
struct recorder;

struct recorder *recorder_create(const struct profile_limits *limits);
/* Frees the recorder and its active profile (no other thread may use it). */
void recorder_destroy(struct recorder *r);
/* Thread-safe profile_add on the active profile. */
enum profile_add_result recorder_add(struct recorder *r, const struct sw_sample *s);
/* recorder_add, never giving the sample an end_timestamp_ns: for samples
 * recorded elsewhere, which aggregate (a fork child's, family.h). */
enum profile_add_result recorder_add_untimed(struct recorder *r, const struct sw_sample *s);
/* Exchanges the active profile for an empty one and returns the finished
 * one (its end time = the new one's start time).  Every add lands in
 * exactly one profile.  NULL only if no empty profile could be allocated
 * (the active profile then keeps recording). */
struct profile *recorder_swap(struct recorder *r);
/* In a fork child, after rt_heap_after_fork_child(): empties the active
 * profile (the parent's samples are not ours) and resets the lock, which a
 * vanished thread may have held; a profile caught mid-update is leaked
 * rather than freed.  Never allocates. */
void recorder_after_fork_child(struct recorder *r);

#endif
