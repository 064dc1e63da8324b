/* The pprof a Pyroscope server accepts and files where its own SDKs' data
 * goes (rules read from grafana/pyroscope; see docs/backends.md).
 *
 * For one profile kind this builds one or two uncompressed pprofs from a
 * recorded profile:
 * - sample types named as Pyroscope's SDKs name them, so the server derives
 *   the standard series name (process_cpu, wall, memory, mutex, block), and
 *   never containing '-';
 * - only string labels, renamed to names both 1.x (legacy [A-Za-z0-9_]) and
 *   2.x accept: "thread name" -> thread_name, "local root span id" ->
 *   span_id (16 lower-case hex digits), "trace endpoint" -> span_name,
 *   other keys with every other byte turned into '_'; number labels are
 *   dropped ("thread id" becomes a string thread_id only when asked);
 *   samples that become identical are merged;
 * - at most max_samples samples and max_bytes bytes: past them the smallest
 *   stacks are merged into one "[trimmed]" stack (logged once);
 * - nothing at all when the kind has no samples.
 */
#ifndef STOWAWAY_ENCODE_PYROSCOPE_H
#define STOWAWAY_ENCODE_PYROSCOPE_H

#include "encode/pprof.h"

#define PYRO_MAX_OUTPUTS 2 /* the lock kind gives a block and a mutex profile */

/* Pyroscope's default per-profile limits (validation.max-profile-*). */
#define PYRO_DEFAULT_MAX_SAMPLES 16000u
#define PYRO_DEFAULT_MAX_BYTES (4u * 1024 * 1024)

/* Labels a series may carry (validation.max-label-names-per-series). */
#define PYRO_MAX_SERIES_LABELS 30u

struct pyro_limits {
	uint32_t max_samples;       /* samples per profile */
	uint32_t max_bytes;         /* uncompressed bytes per profile */
	uint32_t max_sample_labels; /* string labels per sample */
	bool thread_ids;            /* keep "thread id" as a thread_id string label */
};

struct pyro_output {
	const char *series;             /* the __name__ the server will derive */
	const char *sample_type_config; /* JSON for the multipart form, or NULL */
	struct rt_buf raw;              /* uncompressed pprof */
	uint32_t samples;               /* samples in it */
	uint32_t trimmed;               /* samples merged into [trimmed] */
};

/* Fills out[0..n) and returns n (0: the kind has no samples), or -errno.
 * The caller frees each out[i].raw.  o supplies period and comments; its
 * name tables are ignored. */
int pyro_encode_kind(const struct profile *p, enum sw_kind kind, const struct pprof_opts *o,
		     const struct pyro_limits *lim, sw_resolve_fn resolve, void *resolve_ctx,
		     struct pyro_output out[PYRO_MAX_OUTPUTS]);

/* A label key as both rule sets accept it: bytes outside [A-Za-z0-9_] become
 * '_', a leading digit gets a '_' before it, a leading "__" (reserved)
 * becomes "x__".  Writes at most cap-1 bytes and a NUL; returns the length
 * (0 for an empty key). */
size_t pyro_label_name(const char *key, size_t n, char *out, size_t cap);

/* A service name with Pyroscope's characters only ([A-Za-z0-9_.\-/]; any
 * other byte becomes '_'); "unknown_service" when empty. */
size_t pyro_service_name(const char *name, char *out, size_t cap);

#endif
