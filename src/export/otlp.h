/* OpenTelemetry exporter: every period's profiles as one OTLP/HTTP request
 * (ExportProfilesServiceRequest, protobuf, gzip unless configured off) to
 * the profiles endpoint of an OpenTelemetry Collector or any OTLP receiver,
 * with the header OTLP-Profiles-Development-Version.  Settings: config/otlp.h.
 * The usual upload rules apply (export/upload.h: one retry on a 5xx or a
 * network error, none on a 4xx such as 400; export/tls.c for https). */
#ifndef STOWAWAY_EXPORT_OTLP_H
#define STOWAWAY_EXPORT_OTLP_H

#include "config/otlp.h"
#include "export/export.h"

/* NULL (after logging why) when otlp is not enabled or cannot work.  The
 * settings must outlive the exporter. */
struct sw_exporter *export_otlp_create(const struct sw_config *cfg, const struct sw_otlp_config *otlp);

#endif
