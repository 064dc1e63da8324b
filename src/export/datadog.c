/* Datadog exporter: the agent (HTTP over TCP or a unix socket) or the
 * agentless intake (HTTPS with DD-API-KEY).  Wire format in
 * shared/docs/upload-protocols.md; see export.h and datadog.h. */
#include "export/datadog.h"

#include "export/cgroup.h"
#include "export/export.h"
#include "export/text.h"
#include "export/tls.h"
#include "export/upload.h"
#include "export/url.h"
#include "rt/rt.h"
#include "rt/sys.h"

#include <linux/utsname.h>

#define AGENT_PATH "/profiling/v1/input"
#define ORIGIN "stowaway"

struct datadog_state {
	struct export_url url;
	bool agentless;
	struct export_tls_config *tls;
	const struct sw_config *cfg;
	char host[__NEW_UTS_LEN + 1];
	char container_id[EXPORT_CONTAINER_ID_MAX];
	char *headers; /* the fixed extra header lines */
	struct export_upload_log log;
};

/* Tag values may not contain the list separator. */
static void append_tag(struct rt_buf *b, const char *key, const char *value)
{
	if (!value || !value[0])
		return;
	if (b->len > 0)
		rt_buf_append_byte(b, ',');
	rt_buf_append_str(b, key);
	rt_buf_append_byte(b, ':');
	for (const char *p = value; *p; p++)
		rt_buf_append_byte(b, *p == ',' ? '_' : (uint8_t)*p);
}

void export_datadog_tags(const struct sw_config *cfg, const char *host, const char *runtime_id,
			 uint32_t pid, struct rt_buf *out)
{
	struct rt_buf tags = {0};
	char pid_text[16];
	rt_snprintf(pid_text, sizeof(pid_text), "%u", pid);
	append_tag(&tags, "service", cfg->service);
	append_tag(&tags, "env", cfg->env);
	append_tag(&tags, "version", cfg->version);
	append_tag(&tags, "language", "native");
	append_tag(&tags, "runtime-id", runtime_id);
	append_tag(&tags, "profiler_version", STOWAWAY_VERSION);
	append_tag(&tags, "host", host);
	append_tag(&tags, "process_id", pid_text);
	if (cfg->tags[0]) {
		if (tags.len > 0)
			rt_buf_append_byte(&tags, ',');
		rt_buf_append_str(&tags, cfg->tags);
	}
	if (tags.failed)
		out->failed = true;
	else
		export_append_json_escaped(out, (const char *)tags.data, tags.len);
	rt_buf_free(&tags);
}

void export_datadog_event_json(const struct sw_config *cfg, const char *host,
			       const struct sw_export_batch *batch, struct rt_buf *out)
{
	rt_buf_append_str(out, "{\"attachments\":[\"profile.pprof\"],\"tags_profiler\":\"");
	export_datadog_tags(cfg, host, batch->runtime_id, batch->pid, out);
	if (batch->tags && batch->tags[0]) {
		rt_buf_append_byte(out, ',');
		export_append_json_escaped(out, batch->tags, rt_strlen(batch->tags));
	}
	rt_buf_append_str(out, "\",\"start\":\"");
	export_append_rfc3339_ns(out, batch->start_ns);
	rt_buf_append_str(out, "\",\"end\":\"");
	export_append_rfc3339_ns(out, batch->end_ns);
	rt_buf_append_str(out, "\",\"family\":\"native\",\"version\":\"4\",\"internal\":{},"
			       "\"info\":{}}");
}

static int datadog_export(struct sw_exporter *self, const struct sw_export_batch *batch,
			  uint64_t deadline_ns)
{
	struct datadog_state *st = self->state;
	if (!batch->combined_gz || batch->combined_len == 0)
		return 0;
	if (batch->combined_len > EXPORT_MAX_PROFILE_BYTES) {
		rt_warn("datadog: profile of %zu bytes is over the %u byte limit: dropped",
			batch->combined_len, EXPORT_MAX_PROFILE_BYTES);
		return -EMSGSIZE;
	}
	uint8_t random[16];
	if (!rt_random_bytes(random, sizeof(random)))
		rt_memcpy(random, &batch->end_ns, sizeof(batch->end_ns));
	char boundary[40];
	size_t bl = rt_strlcpy(boundary, "stowaway", sizeof(boundary));
	for (size_t i = 0; i < sizeof(random) && bl + 2 < sizeof(boundary); i++)
		bl += rt_snprintf(boundary + bl, sizeof(boundary) - bl, "%02x", random[i]);

	struct rt_buf head = {0}, tail = {0}, headers = {0};
	rt_buf_appendf(&head,
		       "--%s\r\nContent-Disposition: form-data; name=\"event\"; "
		       "filename=\"event.json\"\r\nContent-Type: application/json\r\n\r\n",
		       boundary);
	export_datadog_event_json(st->cfg, st->host, batch, &head);
	rt_buf_appendf(&head,
		       "\r\n--%s\r\nContent-Disposition: form-data; name=\"profile.pprof\"; "
		       "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n",
		       boundary);
	rt_buf_appendf(&tail, "\r\n--%s--\r\n", boundary);
	rt_buf_append_str(&headers, st->headers);
	rt_buf_appendf(&headers, "Content-Type: multipart/form-data; boundary=%s\r\n", boundary);
	rt_buf_append_byte(&headers, 0);

	int rc = -ENOMEM;
	if (!head.failed && !tail.failed && !headers.failed) {
		struct http_segment body[3] = {
			{head.data, head.len},
			{batch->combined_gz, batch->combined_len},
			{tail.data, tail.len},
		};
		struct http_request req = {
			.url = &st->url,
			.tls = st->tls,
			.target = st->agentless ? (st->url.path[0] ? st->url.path : "/")
						: AGENT_PATH,
			.headers = (const char *)headers.data,
			.body = body,
			.n_body = RT_ARRAY_LEN(body),
		};
		rc = export_upload(&st->log, &req, st->cfg->http_timeout_ms, deadline_ns, NULL);
	}
	rt_buf_free(&head);
	rt_buf_free(&tail);
	rt_buf_free(&headers);
	return rc;
}

static void datadog_destroy(struct sw_exporter *self)
{
	struct datadog_state *st = self->state;
	if (st) {
		if (st->tls)
			export_tls_config_destroy(st->tls);
		rt_free(st->headers);
		rt_free(st);
	}
	rt_free(self);
}

static bool build_headers(struct datadog_state *st)
{
	struct rt_buf h = {0};
	rt_buf_appendf(&h,
		       "User-Agent: " ORIGIN "/%s\r\nDD-EVP-ORIGIN: " ORIGIN
		       "\r\nDD-EVP-ORIGIN-VERSION: %s\r\n",
		       STOWAWAY_VERSION, STOWAWAY_VERSION);
	if (st->container_id[0])
		rt_buf_appendf(&h, "Datadog-Container-ID: %s\r\n", st->container_id);
	if (st->agentless)
		rt_buf_appendf(&h, "DD-API-KEY: %s\r\n", st->cfg->api_key);
	rt_buf_append_byte(&h, 0);
	if (h.failed) {
		rt_buf_free(&h);
		return false;
	}
	st->headers = (char *)h.data;
	return true;
}

/* Header values must not be able to inject lines. */
static bool header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static bool choose_endpoint(const struct sw_config *cfg, struct datadog_state *st)
{
	const char *text;
	if (cfg->agent_enabled && cfg->agent_url[0]) {
		text = cfg->agent_url;
	} else if (cfg->api_key[0]) {
		st->agentless = true;
		text = cfg->intake_url;
	} else {
		return false;
	}
	char fallback[EXPORT_URL_PATH_MAX];
	if (st->agentless && !text[0]) {
		rt_snprintf(fallback, sizeof(fallback), "https://intake.profile.%s/api/v2/profile",
			    cfg->site[0] ? cfg->site : "datadoghq.com");
		text = fallback;
	}
	if (!export_url_parse(text, rt_strlen(text), &st->url)) {
		rt_error("datadog: invalid %s URL \"%s\": profiles will not be uploaded",
			 st->agentless ? "intake" : "agent", text);
		return false;
	}
	if (st->agentless) {
		if (st->url.scheme != EXPORT_URL_HTTPS) {
			rt_error("datadog: the intake URL must be https (the API key is never sent "
				 "in clear text): profiles will not be uploaded");
			return false;
		}
		if (!header_safe(cfg->api_key)) {
			rt_error("datadog: DD_API_KEY contains control characters: profiles will "
				 "not be uploaded");
			return false;
		}
	} else if (st->url.scheme == EXPORT_URL_HTTPS) {
		rt_error("datadog: https agent URLs are not supported; use http:// or unix://");
		return false;
	}
	return true;
}

struct sw_exporter *export_datadog_create(const struct sw_config *cfg)
{
	struct sw_exporter *ex = rt_calloc(1, sizeof(*ex));
	struct datadog_state *st = rt_calloc(1, sizeof(*st));
	if (!ex || !st) {
		rt_free(ex);
		rt_free(st);
		rt_error("datadog: out of memory");
		return NULL;
	}
	st->cfg = cfg;
	st->log.exporter = "datadog";
	ex->name = "datadog";
	ex->export_batch = datadog_export;
	ex->destroy = datadog_destroy;
	ex->state = st;
	if (!choose_endpoint(cfg, st)) {
		datadog_destroy(ex);
		return NULL;
	}
	st->log.endpoint = st->agentless ? EXPORT_ENDPOINT_INTAKE : EXPORT_ENDPOINT_AGENT;
	if (st->agentless) {
		st->tls = export_tls_config_create(cfg->ca_file);
		if (!st->tls) {
			datadog_destroy(ex);
			return NULL;
		}
	}
	struct new_utsname uts;
	if (sys_uname(&uts) == 0)
		rt_strlcpy(st->host, uts.nodename, sizeof(st->host));
	if (!header_safe(st->host))
		st->host[0] = '\0';
	if (!export_container_id_read(st->container_id, sizeof(st->container_id)))
		st->container_id[0] = '\0';
	if (!build_headers(st)) {
		rt_error("datadog: out of memory");
		datadog_destroy(ex);
		return NULL;
	}
	if (st->agentless)
		rt_info("datadog: uploading to the intake at %s", st->url.host);
	else if (st->url.scheme == EXPORT_URL_UNIX)
		rt_info("datadog: uploading to the agent at unix://%s", st->url.path);
	else
		rt_info("datadog: uploading to the agent at %s:%u", st->url.host, st->url.port);
	return ex;
}
