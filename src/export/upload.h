/* What the network exporters (Datadog, Pyroscope, OTLP) share: the
 * endpoint each holds (URL, TLS, fixed headers, log state), how such an
 * exporter is made and destroyed, and the upload policy: timeouts bounded
 * by the batch deadline, one retry on a 5xx or a network error, 4xx reasons
 * logged once per status, failures logged once until the next success. */
#ifndef STOWAWAY_EXPORT_UPLOAD_H
#define STOWAWAY_EXPORT_UPLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "export/export.h"
#include "export/http.h"
#include "export/url.h"

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

/* Where a network exporter sends; the first member of its state. */
struct export_endpoint {
	struct export_url url;
	struct export_tls_config *tls; /* https only */
	char *headers;                 /* the fixed header lines, NUL-terminated */
	struct export_upload_log log;
};

/* A new exporter `name` whose state, state_size zeroed bytes, begins with a
 * struct export_endpoint (its log named and of kind `endpoint`) and which
 * export_endpoint_destroy frees.  NULL, with one "<name>: out of memory"
 * line, when memory is short. */
struct sw_exporter *export_endpoint_exporter(const char *name, enum export_endpoint_kind endpoint,
					     size_t state_size,
					     int (*export_batch)(struct sw_exporter *self,
								 const struct sw_export_batch *batch,
								 uint64_t deadline_ns));

/* Frees the endpoint's TLS configuration and headers, the state and ex. */
void export_endpoint_destroy(struct sw_exporter *ex);

/* Creates the TLS configuration when the URL is https (CA bundle from
 * ca_file, or the system's when empty); false when that fails (logged). */
bool export_endpoint_tls(struct export_endpoint *ep, const char *ca_file);

/* POSTs the body segments to `target` on the endpoint with `headers` (the
 * fixed ones when NULL), by export_upload. */
int export_endpoint_post(struct export_endpoint *ep, const char *target, const char *headers,
			 const struct http_segment *body, size_t n_body, uint32_t timeout_ms,
			 uint64_t deadline_ns);

/* Sends req (its deadlines are set here from timeout_ms and deadline_ns).
 * Returns 0 on a 2xx answer, else -errno (-EREMOTEIO for an HTTP error
 * status, which is then in *status_out when non-NULL). */
int export_upload(struct export_upload_log *log, struct http_request *req, uint32_t timeout_ms,
		  uint64_t deadline_ns, int *status_out);

/* Why a backend answered `status` (e.g. "API key rejected"). */
const char *export_status_reason(enum export_endpoint_kind endpoint, int status);

#endif
