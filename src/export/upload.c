/* Network exporters' endpoints, timeouts, retry and error reporting for
 * uploads; see upload.h. */
#include "export/upload.h"

#include "export/tls.h"

#include "rt/rt.h"
#include "rt/sys.h"

#define NS_PER_MS 1000000ull

const char *export_status_reason(enum export_endpoint_kind endpoint, int status)
{
	switch (status) {
	case 400:
		return "bad request: the backend rejected the payload";
	case 401:
	case 403:
		if (endpoint == EXPORT_ENDPOINT_INTAKE)
			return "API key rejected: check DD_API_KEY and DD_SITE";
		if (endpoint == EXPORT_ENDPOINT_PYROSCOPE)
			return "not authorised: check the Pyroscope token or basic auth";
		if (endpoint == EXPORT_ENDPOINT_OTLP)
			return "not authorised: check OTEL_EXPORTER_OTLP_HEADERS";
		return "forbidden by the agent";
	case 404:
		if (endpoint == EXPORT_ENDPOINT_AGENT)
			return "endpoint not found: the Datadog agent is too old or profiling is "
			       "disabled in it";
		return "endpoint not found: check the URL";
	case 408:
		return "the backend timed out reading the request";
	case 413:
		return "profile too large for the backend";
	case 429:
		return "rate limited by the backend";
	default:
		break;
	}
	if (status >= 500)
		return "server error";
	return "unexpected status";
}

static bool first_time_for_status(struct export_upload_log *log, int status)
{
	unsigned bit = (unsigned)(status - 100);
	if (status < 100 || bit >= 64 * RT_ARRAY_LEN(log->client_errors_logged))
		return false;
	uint64_t mask = 1ull << (bit % 64);
	if (log->client_errors_logged[bit / 64] & mask)
		return false;
	log->client_errors_logged[bit / 64] |= mask;
	return true;
}

static const char *errno_text(int err)
{
	switch (-err) {
	case ETIMEDOUT:
		return "timed out";
	case ECONNREFUSED:
		return "connection refused";
	case ECONNRESET:
		return "connection reset";
	case EPIPE:
		return "connection closed while sending";
	case ENOENT:
		return "no such host or socket";
	case EPROTO:
		return "malformed response";
	case EACCES:
		return "certificate or permission rejected";
	case ENETUNREACH:
	case EHOSTUNREACH:
		return "unreachable";
	case EPERM:
	case ENOSYS:
		return "a network system call was refused (a seccomp filter that lacks it?)";
	default:
		return "network error";
	}
}

static const char *endpoint_text(const struct http_request *req, char *buf, size_t cap)
{
	const struct export_url *u = req->url;
	if (u->scheme == EXPORT_URL_UNIX)
		rt_snprintf(buf, cap, "unix://%s", u->path);
	else
		rt_snprintf(buf, cap, u->host_is_ipv6 ? "[%s]:%u" : "%s:%u", u->host, u->port);
	return buf;
}

int export_upload(struct export_upload_log *log, struct http_request *req, uint32_t timeout_ms,
		  uint64_t deadline_ns, int *status_out)
{
	int rc = -ETIMEDOUT;
	int status = 0;
	char where[EXPORT_URL_PATH_MAX + 16];
	for (int attempt = 0; attempt < 2; attempt++) {
		uint64_t now = rt_monotonic_ns();
		if (now >= deadline_ns) {
			rc = attempt == 0 ? -ETIMEDOUT : rc;
			break;
		}
		req->deadline_ns = RT_MIN(deadline_ns, now + (uint64_t)timeout_ms * NS_PER_MS);
		req->connect_deadline_ns =
			RT_MIN(req->deadline_ns,
			       now + (uint64_t)RT_MIN(timeout_ms, EXPORT_CONNECT_TIMEOUT_MS) * NS_PER_MS);
		struct http_response resp;
		rc = http_post(req, &resp);
		if (rc == 0) {
			status = resp.status;
			if (status >= 200 && status < 300)
				break;
			rc = -EREMOTEIO;
			if (status < 500)
				break; /* 3xx/4xx: retrying cannot help */
			rt_debug("%s: %s answered %d %s (%s)", log->exporter,
				 endpoint_text(req, where, sizeof(where)), status, resp.reason,
				 resp.body);
		} else {
			rt_debug("%s: upload to %s failed: %s (%d)", log->exporter,
				 endpoint_text(req, where, sizeof(where)), errno_text(rc), rc);
			if (rc == -EACCES)
				break; /* a rejected certificate stays rejected */
		}
	}
	if (status_out)
		*status_out = status;
	endpoint_text(req, where, sizeof(where));
	if (rc == 0) {
		log->uploads_ok++;
		if (log->failing)
			rt_info("%s: uploads to %s work again", log->exporter, where);
		log->failing = false;
		return 0;
	}
	log->uploads_failed++;
	if (rc == -EREMOTEIO && status >= 400 && status < 500) {
		if (first_time_for_status(log, status))
			rt_warn("%s: %s answered %d: %s (logged once)", log->exporter, where, status,
				export_status_reason(log->endpoint, status));
		return rc;
	}
	if (!log->failing) {
		if (rc == -EREMOTEIO)
			rt_warn("%s: %s answered %d (%s); profiles are dropped until it recovers",
				log->exporter, where, status, export_status_reason(log->endpoint, status));
		else
			rt_warn("%s: cannot upload to %s: %s; profiles are dropped until it recovers",
				log->exporter, where, errno_text(rc));
	}
	log->failing = true;
	return rc;
}

struct sw_exporter *export_endpoint_exporter(const char *name, enum export_endpoint_kind endpoint,
					     size_t state_size,
					     int (*export_batch)(struct sw_exporter *self,
								 const struct sw_export_batch *batch,
								 uint64_t deadline_ns))
{
	struct sw_exporter *ex = rt_calloc(1, sizeof(*ex));
	struct export_endpoint *ep = rt_calloc(1, state_size);
	if (!ex || !ep) {
		rt_free(ex);
		rt_free(ep);
		rt_error("%s: out of memory", name);
		return NULL;
	}
	ep->log.exporter = name;
	ep->log.endpoint = endpoint;
	ex->name = name;
	ex->export_batch = export_batch;
	ex->destroy = export_endpoint_destroy;
	ex->state = ep;
	return ex;
}

void export_endpoint_destroy(struct sw_exporter *ex)
{
	struct export_endpoint *ep = ex->state;
	if (ep) {
		if (ep->tls)
			export_tls_config_destroy(ep->tls);
		rt_free(ep->headers);
		rt_free(ep);
	}
	rt_free(ex);
}

bool export_endpoint_tls(struct export_endpoint *ep, const char *ca_file)
{
	if (ep->url.scheme != EXPORT_URL_HTTPS)
		return true;
	ep->tls = export_tls_config_create(ca_file);
	return ep->tls != NULL;
}

int export_endpoint_post(struct export_endpoint *ep, const char *target, const char *headers,
			 const struct http_segment *body, size_t n_body, uint32_t timeout_ms,
			 uint64_t deadline_ns)
{
	struct http_request req = {
		.url = &ep->url,
		.tls = ep->tls,
		.target = target,
		.headers = headers ? headers : ep->headers,
		.body = body,
		.n_body = n_body,
	};
	return export_upload(&ep->log, &req, timeout_ms, deadline_ns, NULL);
}
