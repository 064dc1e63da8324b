/* OTLP/HTTP profiles exporter (see otlp.h). */
#include "export/otlp.h"

#include "deflate/deflate.h"
#include "encode/otlp.h"
#include "export/upload.h"
#include "export/url.h"
#include "rt/rt.h"

#include <linux/errno.h>

struct otlp_state {
	struct export_endpoint ep; /* first (upload.h) */
	const struct sw_otlp_config *otlp;
};

static int otlp_export(struct sw_exporter *self, const struct sw_export_batch *batch,
		       uint64_t deadline_ns)
{
	struct otlp_state *st = self->state;
	if (!batch->otlp_request || batch->otlp_len == 0)
		return 0;
	struct rt_buf gz = { 0 };
	const uint8_t *body = batch->otlp_request;
	size_t len = batch->otlp_len;
	if (st->otlp->gzip) {
		int r = gz_compress(batch->otlp_request, batch->otlp_len, GZ_LEVEL_DEFAULT, &gz);
		if (r < 0) {
			rt_buf_free(&gz);
			rt_log_once(RT_LOG_WARN, "otlp: could not compress the request (error %d)", -r);
			return r;
		}
		body = gz.data;
		len = gz.len;
	}
	if (len > EXPORT_MAX_PROFILE_BYTES) {
		rt_warn("otlp: request of %zu bytes is over the %u byte limit: dropped", len,
			EXPORT_MAX_PROFILE_BYTES);
		rt_buf_free(&gz);
		return -EMSGSIZE;
	}
	struct http_segment seg = { body, len };
	int rc = export_endpoint_post(&st->ep, st->ep.url.path[0] ? st->ep.url.path : "/", NULL, &seg,
				      1, st->otlp->timeout_ms, deadline_ns);
	rt_buf_free(&gz);
	return rc;
}

struct sw_exporter *export_otlp_create(const struct sw_config *cfg, const struct sw_otlp_config *otlp)
{
	if (!otlp->enabled)
		return NULL;
	struct sw_exporter *ex =
		export_endpoint_exporter("otlp", EXPORT_ENDPOINT_OTLP, sizeof(struct otlp_state), otlp_export);
	if (!ex)
		return NULL;
	struct otlp_state *st = ex->state;
	st->otlp = otlp;
	if (!export_url_parse(otlp->endpoint, rt_strlen(otlp->endpoint), &st->ep.url) ||
	    st->ep.url.scheme == EXPORT_URL_UNIX) {
		rt_error("otlp: unsupported endpoint \"%s\" (http[s]://host[:port]/path): profiles "
			 "will not be sent", otlp->endpoint);
		export_endpoint_destroy(ex);
		return NULL;
	}
	if (!export_endpoint_tls(&st->ep, otlp->ca_file[0] ? otlp->ca_file : cfg->ca_file)) {
		export_endpoint_destroy(ex);
		return NULL;
	}
	struct rt_buf h = { 0 };
	rt_buf_appendf(&h, "User-Agent: stowaway/%s\r\nContent-Type: application/x-protobuf\r\n"
			   "OTLP-Profiles-Development-Version: %s\r\n",
		       STOWAWAY_VERSION, OTLP_PROFILES_DEVELOPMENT_VERSION);
	if (otlp->gzip)
		rt_buf_append_str(&h, "Content-Encoding: gzip\r\n");
	rt_buf_append_str(&h, otlp->headers);
	rt_buf_append_byte(&h, 0);
	if (h.failed) {
		rt_buf_free(&h);
		rt_error("otlp: out of memory");
		export_endpoint_destroy(ex);
		return NULL;
	}
	st->ep.headers = (char *)h.data;
	rt_info("otlp: sending profiles to %s", otlp->endpoint);
	return ex;
}
