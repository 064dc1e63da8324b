/* Exporters: where finished, compressed profiles go.
 *
 * The scheduler builds one batch per period (and one at exit) and hands it
 * to every configured exporter in turn, on the scheduler thread.  An
 * exporter must return by `deadline_ns` (CLOCK_MONOTONIC); it owns no part
 * of the batch after it returns.
 */
#ifndef STOWAWAY_EXPORT_H
#define STOWAWAY_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../config/config.h"

struct sw_export_item {
	enum sw_kind kind;
	const uint8_t *gz; /* gzip-compressed pprof of this kind alone */
	size_t len;
};

/* One profile as Pyroscope files it (encode/pyroscope.h). */
struct sw_export_pyro_item {
	enum sw_kind kind;
	const char *series;             /* process_cpu, wall, memory, mutex, block, ... */
	const char *sample_type_config; /* JSON sent with a multipart upload, or NULL */
	const uint8_t *gz;
	size_t len;
};

struct sw_endpoint_count {
	const char *name;
	uint64_t count;
};
#define SW_MAX_ENDPOINT_COUNTS 256

struct sw_export_batch {
	uint64_t start_ns;  /* CLOCK_REALTIME, start of the period */
	uint64_t end_ns;    /* CLOCK_REALTIME, end of the period */
	uint32_t seq;       /* period number in this process, from 0 */
	uint32_t pid;
	const char *runtime_id; /* UUID string, new after fork */
	/* One per enabled kind; at the exit (final) of a fork child only the
	 * kinds with a sample, and the live heap also when an earlier period
	 * exported it. */
	const struct sw_export_item *items;
	size_t n_items;
	/* All enabled kinds in one profile (sample types side by side), for
	 * backends that take one attachment per upload (Datadog). */
	const uint8_t *combined_gz;
	size_t combined_len;
	bool final;         /* the flush at process exit */
	/* Pyroscope's profiles (only when a Pyroscope exporter is configured). */
	const struct sw_export_pyro_item *pyro_items;
	size_t n_pyro_items;
	/* Requests per trace endpoint in this period (Datadog's endpoint_counts). */
	const struct sw_endpoint_count *endpoint_counts;
	size_t n_endpoint_counts;
	/* Tags of an out-of-period export ("k:v,k:v", e.g. a memory trigger),
	 * added to the backend's tags; NULL for a periodic export. */
	const char *tags;
	/* The period as one OTLP ExportProfilesServiceRequest (uncompressed),
	 * only when an OTLP exporter is configured (encode/otlp.h). */
	const uint8_t *otlp_request;
	size_t otlp_len;
};

struct sw_exporter {
	const char *name;
	/* 0 on success or -errno-like failure; logs its own errors. */
	int (*export_batch)(struct sw_exporter *self, const struct sw_export_batch *batch,
			    uint64_t deadline_ns);
	void (*destroy)(struct sw_exporter *self);
	void *state;
	/* Reads batch->combined_gz; the scheduler builds the combined profile
	 * only when some exporter does (it is NULL otherwise). */
	bool wants_combined;
};

/* Built from sw_cfg; each returns NULL (after logging why) when its sink is
 * not configured or cannot work. */
struct sw_exporter *export_file_create(const struct sw_config *cfg);
struct sw_exporter *export_datadog_create(const struct sw_config *cfg);
struct sw_exporter *export_pyroscope_create(const struct sw_config *cfg);

/* How many labels the Pyroscope application name carries (service_name and
 * the other series labels the server adds included), so that sample labels
 * stay within the server's labels-per-series limit. */
uint32_t export_pyroscope_series_labels(const struct sw_config *cfg);

#endif
