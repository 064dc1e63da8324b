/* Pyroscope (and compatible) exporter: one POST /ingest per profile kind.
 * See export.h and pyroscope.h. */
#include "export/pyroscope.h"

#include "encode/pyroscope.h"
#include "export/export.h"
#include "export/text.h"
#include "export/upload.h"
#include "export/url.h"
#include "rt/rt.h"
#include "rt/sys.h"

struct pyroscope_state {
	struct export_endpoint ep; /* first (upload.h) */
	const struct sw_config *cfg;
};

/* Bytes a label value keeps in the application name: the name parser ends
 * a value at ',' or '}' and trims spaces, and 1.x wants UTF-8. */
static bool value_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == '/' || c == ':';
}

static bool is_builtin_key(const struct sw_config *cfg, const char *key, size_t n)
{
	return (n == 3 && rt_memcmp(key, "env", 3) == 0 && cfg->env[0]) ||
	       (n == 7 && rt_memcmp(key, "version", 7) == 0 && cfg->version[0]);
}

/* Calls fn for each application label: env, version, then DD_TAGS entries
 * (not those that repeat env or version when those are set). */
static uint32_t for_each_app_label(const struct sw_config *cfg,
				   void (*fn)(void *ctx, const char *k, size_t kn, const char *v,
					      size_t vn),
				   void *ctx)
{
	uint32_t n = 0;
	if (cfg->env[0]) {
		fn(ctx, "env", 3, cfg->env, rt_strlen(cfg->env));
		n++;
	}
	if (cfg->version[0]) {
		fn(ctx, "version", 7, cfg->version, rt_strlen(cfg->version));
		n++;
	}
	/* DD_TAGS is normalised to "k:v,k:v". */
	const char *t = cfg->tags;
	for (size_t guard = 0; *t && guard < SW_CFG_TAGS; guard++) {
		const char *end = rt_strchr(t, ',');
		size_t len = end ? (size_t)(end - t) : rt_strlen(t);
		const char *colon = rt_memchr(t, ':', len);
		if (colon && colon > t && (size_t)(colon - t) + 1 < len &&
		    !is_builtin_key(cfg, t, (size_t)(colon - t))) {
			fn(ctx, t, (size_t)(colon - t), colon + 1, len - (size_t)(colon - t) - 1);
			n++;
		}
		t += len + (end ? 1 : 0);
	}
	return n;
}

struct name_ctx {
	struct rt_buf *b;
	bool first;
};

static void append_app_label(void *ctx, const char *k, size_t kn, const char *v, size_t vn)
{
	struct name_ctx *c = ctx;
	char key[128];
	if (pyro_label_name(k, kn, key, sizeof(key)) == 0)
		return;
	if (!c->first)
		rt_buf_append_byte(c->b, ',');
	c->first = false;
	rt_buf_append_str(c->b, key);
	rt_buf_append_byte(c->b, '=');
	for (size_t i = 0; i < vn && i < 2048; i++)
		rt_buf_append_byte(c->b, value_char_ok(v[i]) ? (uint8_t)v[i] : '_');
}

static void count_label(void *ctx, const char *k, size_t kn, const char *v, size_t vn)
{
	RT_UNUSED(ctx);
	RT_UNUSED(k);
	RT_UNUSED(kn);
	RT_UNUSED(v);
	RT_UNUSED(vn);
}

/* __name__, __delta__, pyroscope_spy and service_name from the ingest
 * handler, and the profile-type labels the distributor adds. */
#define SERVER_SERIES_LABELS 9u

uint32_t export_pyroscope_series_labels(const struct sw_config *cfg)
{
	return SERVER_SERIES_LABELS + for_each_app_label(cfg, count_label, NULL);
}

void export_pyroscope_target(const struct sw_config *cfg, const char *path_prefix,
			     enum sw_kind kind, uint64_t start_ns, uint64_t end_ns,
			     struct rt_buf *out)
{
	/* The application name with its labels, before URL encoding. */
	struct rt_buf name = {0};
	char service[SW_CFG_STR];
	pyro_service_name(cfg->service, service, sizeof(service));
	rt_buf_append_str(&name, service);
	rt_buf_append_byte(&name, '{');
	struct name_ctx c = {&name, true};
	(void)for_each_app_label(cfg, append_app_label, &c);
	rt_buf_append_byte(&name, '}');

	size_t prefix_len = rt_strlen(path_prefix);
	while (prefix_len > 0 && path_prefix[prefix_len - 1] == '/')
		prefix_len--;
	rt_buf_append(out, path_prefix, prefix_len);
	rt_buf_append_str(out, "/ingest?name=");
	if (name.failed)
		out->failed = true;
	else
		export_append_url_encoded(out, (const char *)name.data, name.len);
	rt_buf_free(&name);
	rt_buf_appendf(out, "&from=%llu&until=%llu&format=pprof&spyName=stowaway",
		       (unsigned long long)(start_ns / RT_NS_PER_SEC),
		       (unsigned long long)((end_ns + RT_NS_PER_SEC - 1) / RT_NS_PER_SEC));
	if (kind == SW_KIND_CPU)
		rt_buf_appendf(out, "&sampleRate=%u", cfg->cpu_hz);
}

static int upload_one(struct pyroscope_state *st, const struct sw_export_batch *batch,
		      const struct sw_export_pyro_item *item, uint64_t deadline_ns)
{
	struct rt_buf target = {0}, headers = {0}, head = {0}, tail = {0};
	export_pyroscope_target(st->cfg, st->ep.url.path, item->kind, batch->start_ns, batch->end_ns,
				&target);
	rt_buf_append_byte(&target, 0);
	rt_buf_append_str(&headers, st->ep.headers);
	struct http_segment body[3];
	size_t n_body = 0;
	if (item->sample_type_config) {
		/* The form pyroscope-go sends: the profile and how to name its types. */
		char boundary[EXPORT_BOUNDARY_MAX];
		export_make_boundary(boundary, sizeof(boundary), batch->end_ns);
		export_form_part(&head, boundary, "profile", "profile.pprof", "application/octet-stream");
		rt_buf_append_str(&tail, "\r\n");
		export_form_part(&tail, boundary, "sample_type_config", "sample_type_config.json",
				 "application/octet-stream");
		rt_buf_append_str(&tail, item->sample_type_config);
		export_form_end(&tail, boundary);
		rt_buf_appendf(&headers, "Content-Type: multipart/form-data; boundary=%s\r\n",
			       boundary);
		body[n_body++] = (struct http_segment){head.data, head.len};
		body[n_body++] = (struct http_segment){item->gz, item->len};
		body[n_body++] = (struct http_segment){tail.data, tail.len};
	} else {
		rt_buf_append_str(&headers, "Content-Type: application/octet-stream\r\n");
		body[n_body++] = (struct http_segment){item->gz, item->len};
	}
	rt_buf_append_byte(&headers, 0);
	int rc = -ENOMEM;
	if (!target.failed && !headers.failed && !head.failed && !tail.failed)
		rc = export_endpoint_post(&st->ep, (const char *)target.data, (const char *)headers.data,
					  body, n_body, st->cfg->http_timeout_ms, deadline_ns);
	rt_buf_free(&target);
	rt_buf_free(&headers);
	rt_buf_free(&head);
	rt_buf_free(&tail);
	return rc;
}

static int pyroscope_export(struct sw_exporter *self, const struct sw_export_batch *batch,
			    uint64_t deadline_ns)
{
	struct pyroscope_state *st = self->state;
	int result = 0;
	for (size_t i = 0; i < batch->n_pyro_items; i++) {
		const struct sw_export_pyro_item *item = &batch->pyro_items[i];
		if (!item->gz || item->len == 0)
			continue;
		int rc = upload_one(st, batch, item, deadline_ns);
		if (rc < 0)
			result = rc;
		if (rc == -ETIMEDOUT && rt_monotonic_ns() >= deadline_ns)
			break;
	}
	return result;
}

static bool build_headers(struct pyroscope_state *st)
{
	const struct sw_config *cfg = st->cfg;
	if (!export_header_safe(cfg->pyroscope_token) || !export_header_safe(cfg->pyroscope_basic_auth) ||
	    !export_header_safe(cfg->pyroscope_tenant)) {
		rt_error("pyroscope: credentials or tenant contain control characters: profiles "
			 "will not be uploaded");
		return false;
	}
	struct rt_buf h = {0};
	rt_buf_appendf(&h, "User-Agent: stowaway/%s\r\n", STOWAWAY_VERSION);
	if (cfg->pyroscope_token[0]) {
		rt_buf_appendf(&h, "Authorization: Bearer %s\r\n", cfg->pyroscope_token);
	} else if (cfg->pyroscope_basic_auth[0]) {
		rt_buf_append_str(&h, "Authorization: Basic ");
		export_append_base64(&h, (const uint8_t *)cfg->pyroscope_basic_auth,
				     rt_strlen(cfg->pyroscope_basic_auth));
		rt_buf_append_str(&h, "\r\n");
	}
	if (cfg->pyroscope_tenant[0])
		rt_buf_appendf(&h, "X-Scope-OrgID: %s\r\n", cfg->pyroscope_tenant);
	rt_buf_append_byte(&h, 0);
	if (h.failed) {
		rt_buf_free(&h);
		rt_error("pyroscope: out of memory");
		return false;
	}
	st->ep.headers = (char *)h.data;
	return true;
}

struct sw_exporter *export_pyroscope_create(const struct sw_config *cfg)
{
	if (!cfg->pyroscope_url[0])
		return NULL;
	struct sw_exporter *ex = export_endpoint_exporter("pyroscope", EXPORT_ENDPOINT_PYROSCOPE,
							  sizeof(struct pyroscope_state), pyroscope_export);
	if (!ex)
		return NULL;
	struct pyroscope_state *st = ex->state;
	st->cfg = cfg;
	if (!export_url_parse(cfg->pyroscope_url, rt_strlen(cfg->pyroscope_url), &st->ep.url) ||
	    rt_memchr(st->ep.url.path, '?', rt_strlen(st->ep.url.path))) {
		rt_error("pyroscope: unsupported URL \"%s\" (http[s]://host:port[/prefix] or "
			 "unix:///socket): profiles will not be uploaded",
			 cfg->pyroscope_url);
		export_endpoint_destroy(ex);
		return NULL;
	}
	if (!export_endpoint_tls(&st->ep, cfg->ca_file) || !build_headers(st)) {
		export_endpoint_destroy(ex);
		return NULL;
	}
	rt_info("pyroscope: uploading to %s", cfg->pyroscope_url);
	return ex;
}
