/* The OpenTelemetry exporter's settings, from the variables the
 * OpenTelemetry SDK specification defines (read once, then immutable):
 *
 *   OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT  full URL, used as is; else
 *   OTEL_EXPORTER_OTLP_ENDPOINT           base URL + "/v1development/profiles"
 *   OTEL_EXPORTER_OTLP_[PROFILES_]PROTOCOL    only "http/protobuf"
 *   OTEL_EXPORTER_OTLP_[PROFILES_]HEADERS     key=value,... (values %-decoded)
 *   OTEL_EXPORTER_OTLP_[PROFILES_]COMPRESSION gzip (our default) | none
 *   OTEL_EXPORTER_OTLP_[PROFILES_]TIMEOUT     milliseconds (default 10000)
 *   OTEL_EXPORTER_OTLP_[PROFILES_]CERTIFICATE CA bundle for https
 *   OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES  resource attributes
 *
 * Without an endpoint the exporter is off (opt-in).  The resource carries
 * service.name (OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES', else
 * DD_SERVICE or the program name), service.version (DD_VERSION),
 * deployment.environment.name (DD_ENV) and process.pid, then every other
 * OTEL_RESOURCE_ATTRIBUTES entry; an entry there overrides ours except
 * service.name as above. */
#ifndef STOWAWAY_CONFIG_OTLP_H
#define STOWAWAY_CONFIG_OTLP_H

#include "config/config.h"

#define SW_OTLP_MAX_ATTRIBUTES 32
#define SW_OTLP_HEADERS_MAX 2048

struct sw_otlp_attribute {
	char key[SW_CFG_STR];
	char value[SW_CFG_STR];
};

struct sw_otlp_config {
	bool enabled;
	char endpoint[SW_CFG_PATH];       /* full URL of the profiles endpoint */
	char headers[SW_OTLP_HEADERS_MAX]; /* "Name: value\r\n" lines */
	bool gzip;
	uint32_t timeout_ms;
	char ca_file[SW_CFG_PATH];        /* "" : the config's (STOWAWAY_CA_FILE) */
	/* Resource attributes except process.pid (added per process). */
	struct sw_otlp_attribute resource[SW_OTLP_MAX_ATTRIBUTES];
	uint32_t n_resource;
};

/* Reads the variables above (DD_* values from cfg).  A malformed value is
 * reported once and the exporter stays off (or the entry is skipped, for a
 * resource attribute or header). */
void config_otlp_load(const struct sw_config *cfg, struct sw_otlp_config *out);

#endif
