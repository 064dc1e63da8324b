/* Pyroscope (and compatible) exporter: one POST /ingest per profile kind.
 * See export.h and pyroscope.h. */
#include "export/pyroscope.h"

#include "export/export.h"
#include "export/text.h"
#include "export/tls.h"
#include "export/upload.h"
#include "export/url.h"
#include "rt/rt.h"
#include "rt/sys.h"

struct pyroscope_state {
	struct export_url url;
	const struct sw_config *cfg;
	struct export_tls_config *tls; /* https only */
	char *headers;
	struct export_upload_log log;
};

static bool label_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == '/' || c == ':';
}

static void append_label_text(struct rt_buf *b, const char *s, size_t n, bool is_key)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		/* Keys are identifiers: no '-', '/' or ':' there. */
		bool ok = label_char_ok(c) && !(is_key && (c == '-' || c == '/' || c == ':'));
		rt_buf_append_byte(b, ok ? (uint8_t)c : '_');
	}
}

static void append_label(struct rt_buf *b, bool *first, const char *key, size_t key_len,
			 const char *value, size_t value_len)
{
	if (key_len == 0 || value_len == 0)
		return;
	if (!*first)
		rt_buf_append_byte(b, ',');
	*first = false;
	append_label_text(b, key, key_len, true);
	rt_buf_append_byte(b, '=');
	append_label_text(b, value, value_len, false);
}

void export_pyroscope_target(const struct sw_config *cfg, const char *path_prefix,
			     enum sw_kind kind, uint64_t start_ns, uint64_t end_ns,
			     struct rt_buf *out)
{
	/* The application name with its labels, before URL encoding. */
	struct rt_buf name = {0};
	append_label_text(&name, cfg->service, rt_strlen(cfg->service), false);
	rt_buf_append_byte(&name, '{');
	bool first = true;
	append_label(&name, &first, "env", 3, cfg->env, rt_strlen(cfg->env));
	append_label(&name, &first, "version", 7, cfg->version, rt_strlen(cfg->version));
	/* DD_TAGS is normalised to "k:v,k:v". */
	const char *t = cfg->tags;
	for (size_t guard = 0; *t && guard < SW_CFG_TAGS; guard++) {
		const char *end = rt_strchr(t, ',');
		size_t len = end ? (size_t)(end - t) : rt_strlen(t);
		const char *colon = rt_memchr(t, ':', len);
		if (colon)
			append_label(&name, &first, t, (size_t)(colon - t), colon + 1,
				     len - (size_t)(colon - t) - 1);
		t += len + (end ? 1 : 0);
	}
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

static int pyroscope_export(struct sw_exporter *self, const struct sw_export_batch *batch,
			    uint64_t deadline_ns)
{
	struct pyroscope_state *st = self->state;
	int result = 0;
	for (size_t i = 0; i < batch->n_items; i++) {
		const struct sw_export_item *item = &batch->items[i];
		if (!item->gz || item->len == 0)
			continue;
		if (item->len > EXPORT_MAX_PROFILE_BYTES) {
			rt_warn("pyroscope: %s profile of %zu bytes is over the %u byte limit: "
				"dropped",
				sw_kind_name(item->kind), item->len, EXPORT_MAX_PROFILE_BYTES);
			result = -EMSGSIZE;
			continue;
		}
		struct rt_buf target = {0};
		export_pyroscope_target(st->cfg, st->url.path, item->kind, batch->start_ns,
					batch->end_ns, &target);
		rt_buf_append_byte(&target, 0);
		if (target.failed) {
			rt_buf_free(&target);
			result = -ENOMEM;
			continue;
		}
		struct http_segment body = {item->gz, item->len};
		struct http_request req = {
			.url = &st->url,
			.tls = st->tls,
			.target = (const char *)target.data,
			.headers = st->headers,
			.body = &body,
			.n_body = 1,
		};
		int rc = export_upload(&st->log, &req, st->cfg->http_timeout_ms, deadline_ns, NULL);
		rt_buf_free(&target);
		if (rc < 0)
			result = rc;
		if (rc == -ETIMEDOUT && rt_monotonic_ns() >= deadline_ns)
			break;
	}
	return result;
}

static void pyroscope_destroy(struct sw_exporter *self)
{
	struct pyroscope_state *st = self->state;
	if (st) {
		if (st->tls)
			export_tls_config_destroy(st->tls);
		rt_free(st->headers);
		rt_free(st);
	}
	rt_free(self);
}

static bool header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static bool build_headers(struct pyroscope_state *st)
{
	const struct sw_config *cfg = st->cfg;
	if (!header_safe(cfg->pyroscope_token) || !header_safe(cfg->pyroscope_basic_auth) ||
	    !header_safe(cfg->pyroscope_tenant)) {
		rt_error("pyroscope: credentials or tenant contain control characters: profiles "
			 "will not be uploaded");
		return false;
	}
	struct rt_buf h = {0};
	rt_buf_appendf(&h, "User-Agent: stowaway/%s\r\nContent-Type: application/octet-stream\r\n",
		       STOWAWAY_VERSION);
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
	st->headers = (char *)h.data;
	return true;
}

struct sw_exporter *export_pyroscope_create(const struct sw_config *cfg)
{
	if (!cfg->pyroscope_url[0])
		return NULL;
	struct sw_exporter *ex = rt_calloc(1, sizeof(*ex));
	struct pyroscope_state *st = rt_calloc(1, sizeof(*st));
	if (!ex || !st) {
		rt_free(ex);
		rt_free(st);
		rt_error("pyroscope: out of memory");
		return NULL;
	}
	st->cfg = cfg;
	st->log.exporter = "pyroscope";
	st->log.endpoint = EXPORT_ENDPOINT_PYROSCOPE;
	ex->name = "pyroscope";
	ex->export_batch = pyroscope_export;
	ex->destroy = pyroscope_destroy;
	ex->state = st;
	if (!export_url_parse(cfg->pyroscope_url, rt_strlen(cfg->pyroscope_url), &st->url) ||
	    rt_memchr(st->url.path, '?', rt_strlen(st->url.path))) {
		rt_error("pyroscope: unsupported URL \"%s\" (http[s]://host:port[/prefix] or "
			 "unix:///socket): profiles will not be uploaded",
			 cfg->pyroscope_url);
		pyroscope_destroy(ex);
		return NULL;
	}
	if (st->url.scheme == EXPORT_URL_HTTPS) {
		st->tls = export_tls_config_create(cfg->ca_file);
		if (!st->tls) {
			pyroscope_destroy(ex);
			return NULL;
		}
	}
	if (!build_headers(st)) {
		pyroscope_destroy(ex);
		return NULL;
	}
	rt_info("pyroscope: uploading to %s", cfg->pyroscope_url);
	return ex;
}
