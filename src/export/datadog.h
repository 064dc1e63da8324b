/* Pieces of the Datadog exporter shared with tests (the exporter itself is
 * export_datadog_create in export.h). */
#ifndef STOWAWAY_EXPORT_DATADOG_H
#define STOWAWAY_EXPORT_DATADOG_H

#include <stdint.h>

#include "config/config.h"
#include "export/export.h"
#include "rt/rt.h"

/* tags_profiler, JSON-escaped: service, env, version, language:native,
 * runtime-id, profiler_version, host, process_id, then DD_TAGS. */
void export_datadog_tags(const struct sw_config *cfg, const char *host, const char *runtime_id,
			 uint32_t pid, struct rt_buf *out);

/* The event.json attachment of one upload. */
void export_datadog_event_json(const struct sw_config *cfg, const char *host,
			       const struct sw_export_batch *batch, struct rt_buf *out);

#endif
