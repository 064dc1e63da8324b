/* Pieces of the Datadog exporter shared with tests (the exporter itself is
 * export_datadog_create in export.h). */
#ifndef STOWAWAY_EXPORT_DATADOG_H
#define STOWAWAY_EXPORT_DATADOG_H

#include <stdint.h>

#include "config/config.h"
#include "export/export.h"
#include "rt/rt.h"

/* tags_profiler, JSON-escaped: service, env, version, language:native,
 * runtime-id, profiler_version, host, process_id, then DD_TAGS without the
 * entries whose key is one of those (set) tags: ours win. */
void export_datadog_tags(const struct sw_config *cfg, const char *host, const char *runtime_id,
			 uint32_t pid, struct rt_buf *out);

/* What event.json's info object says beyond the configuration. */
struct export_datadog_info {
	const char *start_time; /* RFC 3339: when profiling started */
	const char *kernel;     /* "sysname release version" */
};

/* The event.json attachment of one upload (endpoint_counts from the batch,
 * internal and info filled; info may be NULL). */
void export_datadog_event_json(const struct sw_config *cfg, const char *host,
			       const struct export_datadog_info *info,
			       const struct sw_export_batch *batch, struct rt_buf *out);

#endif
