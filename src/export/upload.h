/* The upload policy shared by the network exporters: timeouts bounded by
 * the batch deadline, one retry on a 5xx or a network error, 4xx reasons
 * logged once per status, failures logged once until the next success. */
#ifndef STOWAWAY_EXPORT_UPLOAD_H
#define STOWAWAY_EXPORT_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "export/http.h"

/* Profiles larger than this are refused by the backends: drop them. */
#define EXPORT_MAX_PROFILE_BYTES (10u * 1024 * 1024)
/* Connecting (and the TLS handshake) never takes more than this. */
#define EXPORT_CONNECT_TIMEOUT_MS 3000u

enum export_endpoint_kind {
	EXPORT_ENDPOINT_AGENT,     /* Datadog agent */
	EXPORT_ENDPOINT_INTAKE,    /* Datadog agentless intake */
	EXPORT_ENDPOINT_PYROSCOPE,
	EXPORT_ENDPOINT_OTLP,      /* OpenTelemetry collector (OTLP/HTTP) */
};

/* Per-exporter memory of what was already logged. */
struct export_upload_log {
	const char *exporter;        /* "datadog", "pyroscope" */
	enum export_endpoint_kind endpoint;
	uint64_t client_errors_logged[8]; /* bit per status 100..611 */
	bool failing;                /* a failure was logged since the last success */
	uint64_t uploads_ok;
	uint64_t uploads_failed;
};

/* Sends req (its deadlines are set here from timeout_ms and deadline_ns).
 * Returns 0 on a 2xx answer, else -errno (-EREMOTEIO for an HTTP error
 * status, which is then in *status_out when non-NULL). */
int export_upload(struct export_upload_log *log, struct http_request *req, uint32_t timeout_ms,
		  uint64_t deadline_ns, int *status_out);

/* Why a backend answered `status` (e.g. "API key rejected"). */
const char *export_status_reason(enum export_endpoint_kind endpoint, int status);

#endif
