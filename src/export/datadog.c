/* Datadog exporter: the agent (HTTP over TCP or a unix socket) or the
 * agentless intake (HTTPS with DD-API-KEY).  Wire format in
 * shared/docs/upload-protocols.md; see export.h and datadog.h. */
#include "export/datadog.h"

#include "export/cgroup.h"
#include "export/export.h"
#include "export/text.h"
#include "export/upload.h"
#include "export/url.h"
#include "rt/rt.h"
#include "rt/sys.h"

#include <linux/utsname.h>

#define AGENT_PATH "/profiling/v1/input"
#define ORIGIN "stowaway"

struct datadog_state {
	struct export_endpoint ep; /* first (upload.h) */
	bool agentless;
	const struct sw_config *cfg;
	char host[__NEW_UTS_LEN + 1];
	char container_id[EXPORT_CONTAINER_ID_MAX];
	char entity_id[EXPORT_ENTITY_ID_MAX];
	char external_env[SW_CFG_STR];
	char target[EXPORT_URL_PATH_MAX + sizeof(AGENT_PATH)];
	char start_time[40]; /* RFC 3339, when the exporter was made */
	char kernel[3 * (__NEW_UTS_LEN + 1)];
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

static const char *const builtin_tag_keys[] = {
	"service", "env", "version", "language", "runtime-id", "profiler_version", "host",
	"process_id",
};

/* Whether a DD_TAGS entry's key is one of ours that is set (ours wins). */
static bool builtin_tag_set(const struct sw_config *cfg, const char *key, size_t n)
{
	for (size_t i = 0; i < RT_ARRAY_LEN(builtin_tag_keys); i++) {
		if (rt_strlen(builtin_tag_keys[i]) != n || rt_memcmp(builtin_tag_keys[i], key, n) != 0)
			continue;
		if (i == 1)
			return cfg->env[0] != '\0';
		if (i == 2)
			return cfg->version[0] != '\0';
		return true;
	}
	return false;
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
	/* DD_TAGS is normalised to "k:v,k:v". */
	size_t total = rt_strnlen(cfg->tags, SW_CFG_TAGS);
	for (size_t at = 0, guard = 0; at < total && guard < SW_CFG_TAGS; guard++) {
		const char *entry = cfg->tags + at;
		const char *comma = rt_memchr(entry, ',', total - at);
		size_t len = comma ? (size_t)(comma - entry) : total - at;
		const char *colon = rt_memchr(entry, ':', len);
		size_t key_len = colon ? (size_t)(colon - entry) : len;
		if (len > 0 && !builtin_tag_set(cfg, entry, key_len)) {
			if (tags.len > 0)
				rt_buf_append_byte(&tags, ',');
			rt_buf_append(&tags, entry, len);
		}
		at += len + 1;
	}
	if (tags.failed)
		out->failed = true;
	else
		export_append_json_escaped(out, (const char *)tags.data, tags.len);
	rt_buf_free(&tags);
}

static void append_json_string(struct rt_buf *out, const char *s)
{
	rt_buf_append_byte(out, '"');
	export_append_json_escaped(out, s, rt_strlen(s));
	rt_buf_append_byte(out, '"');
}

void export_datadog_event_json(const struct sw_config *cfg, const char *host,
			       const struct export_datadog_info *info,
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
	rt_buf_append_str(out, "\",\"family\":\"native\",\"version\":\"4\",\"endpoint_counts\":{");
	for (size_t i = 0; i < batch->n_endpoint_counts; i++) {
		if (i)
			rt_buf_append_byte(out, ',');
		append_json_string(out, batch->endpoint_counts[i].name);
		rt_buf_appendf(out, ":%llu", (unsigned long long)batch->endpoint_counts[i].count);
	}
	rt_buf_append_str(out, "},\"internal\":{\"profiler_version\":");
	append_json_string(out, STOWAWAY_VERSION);
	rt_buf_append_str(out, "},\"info\":{\"application\":{\"start_time\":");
	append_json_string(out, info && info->start_time ? info->start_time : "");
	rt_buf_append_str(out, ",\"service\":");
	append_json_string(out, cfg->service);
	rt_buf_append_str(out, ",\"env\":");
	append_json_string(out, cfg->env);
	rt_buf_append_str(out, ",\"version\":");
	append_json_string(out, cfg->version);
	rt_buf_append_str(out, "},\"platform\":{\"hostname\":");
	append_json_string(out, host);
	rt_buf_append_str(out, ",\"kernel\":");
	append_json_string(out, info && info->kernel ? info->kernel : "");
	rt_buf_append_str(out, "},\"runtime\":{\"engine\":\"native\"},\"profiler\":{\"version\":");
	append_json_string(out, STOWAWAY_VERSION);
	rt_buf_append_str(out, ",\"timeline_enabled\":");
	rt_buf_append_str(out, cfg->timeline ? "true" : "false");
	rt_buf_append_str(out, "}}}");
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
	char boundary[EXPORT_BOUNDARY_MAX];
	export_make_boundary(boundary, sizeof(boundary), batch->end_ns);

	struct rt_buf head = {0}, tail = {0}, headers = {0};
	export_form_part(&head, boundary, "event", "event.json", "application/json");
	struct export_datadog_info info = {st->start_time, st->kernel};
	export_datadog_event_json(st->cfg, st->host, &info, batch, &head);
	rt_buf_append_str(&head, "\r\n");
	export_form_part(&head, boundary, "profile.pprof", "profile.pprof", "application/octet-stream");
	export_form_end(&tail, boundary);
	rt_buf_append_str(&headers, st->ep.headers);
	rt_buf_appendf(&headers, "Content-Type: multipart/form-data; boundary=%s\r\n", boundary);
	rt_buf_append_byte(&headers, 0);

	int rc = -ENOMEM;
	if (!head.failed && !tail.failed && !headers.failed) {
		struct http_segment body[3] = {
			{head.data, head.len},
			{batch->combined_gz, batch->combined_len},
			{tail.data, tail.len},
		};
		rc = export_endpoint_post(&st->ep, st->target, (const char *)headers.data, body,
					  RT_ARRAY_LEN(body), st->cfg->http_timeout_ms, deadline_ns);
	}
	rt_buf_free(&head);
	rt_buf_free(&tail);
	rt_buf_free(&headers);
	return rc;
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
	if (st->entity_id[0])
		rt_buf_appendf(&h, "Datadog-Entity-ID: %s\r\n", st->entity_id);
	if (st->external_env[0])
		rt_buf_appendf(&h, "Datadog-External-Env: %s\r\n", st->external_env);
	if (st->agentless)
		rt_buf_appendf(&h, "DD-API-KEY: %s\r\n", st->cfg->api_key);
	rt_buf_append_byte(&h, 0);
	if (h.failed) {
		rt_buf_free(&h);
		return false;
	}
	st->ep.headers = (char *)h.data;
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
	if (!export_url_parse(text, rt_strlen(text), &st->ep.url)) {
		rt_error("datadog: invalid %s URL \"%s\": profiles will not be uploaded",
			 st->agentless ? "intake" : "agent", text);
		return false;
	}
	if (st->agentless) {
		if (st->ep.url.scheme != EXPORT_URL_HTTPS) {
			rt_error("datadog: the intake URL must be https (the API key is never sent "
				 "in clear text): profiles will not be uploaded");
			return false;
		}
		if (!export_header_safe(cfg->api_key)) {
			rt_error("datadog: DD_API_KEY contains control characters: profiles will "
				 "not be uploaded");
			return false;
		}
	} else if (st->ep.url.scheme == EXPORT_URL_HTTPS) {
		rt_error("datadog: https agent URLs are not supported; use http:// or unix://");
		return false;
	}
	return true;
}

/* Once per process: DD_API_KEY alone used to select the intake. */
static void notice_api_key_change(const struct sw_config *cfg)
{
	static atomic_int logged;
	if (!cfg->api_key_ignored_for_agent || atomic_exchange(&logged, 1))
		return;
	if (cfg->agent_enabled)
		rt_warn("DD_API_KEY is set but DD_PROFILING_AGENTLESS is not true: profiles go to "
			"the agent at %s, as Datadog's tracers do (earlier stowaway versions sent "
			"them to the intake); set DD_PROFILING_AGENTLESS=true to upload without an "
			"agent",
			cfg->agent_url);
	else
		rt_warn("DD_API_KEY is set but DD_PROFILING_AGENTLESS is not true: profiles are "
			"not sent to Datadog (earlier stowaway versions sent them to the intake); "
			"set DD_PROFILING_AGENTLESS=true to upload without an agent");
}

struct sw_exporter *export_datadog_create(const struct sw_config *cfg)
{
	notice_api_key_change(cfg);
	/* No destination (profiles go to a directory or Pyroscope only): nothing
	 * made, which every fork child would make and free again. */
	if (!(cfg->agent_enabled && cfg->agent_url[0]) && !cfg->api_key[0])
		return NULL;
	struct sw_exporter *ex = export_endpoint_exporter("datadog", EXPORT_ENDPOINT_AGENT,
							  sizeof(struct datadog_state), datadog_export);
	if (!ex)
		return NULL;
	ex->wants_combined = true;
	struct datadog_state *st = ex->state;
	st->cfg = cfg;
	if (!choose_endpoint(cfg, st)) {
		export_endpoint_destroy(ex);
		return NULL;
	}
	/* https is the intake's scheme and refused for the agent: TLS for the intake only. */
	st->ep.log.endpoint = st->agentless ? EXPORT_ENDPOINT_INTAKE : EXPORT_ENDPOINT_AGENT;
	if (!export_endpoint_tls(&st->ep, cfg->ca_file)) {
		export_endpoint_destroy(ex);
		return NULL;
	}
	struct new_utsname uts;
	if (sys_uname(&uts) == 0)
		rt_strlcpy(st->host, uts.nodename, sizeof(st->host));
	if (!export_header_safe(st->host))
		st->host[0] = '\0';
	if (!export_container_id_read(cfg->cgroup_file, st->container_id, sizeof(st->container_id)))
		st->container_id[0] = '\0';
	if (!export_entity_id_read(cfg->cgroup_file, cfg->cgroup_mount, st->entity_id,
				   sizeof(st->entity_id)))
		st->entity_id[0] = '\0';
	if (export_header_safe(cfg->external_env))
		rt_strlcpy(st->external_env, cfg->external_env, sizeof(st->external_env));
	else
		rt_warn("datadog: DD_EXTERNAL_ENV contains control characters: not sent");
	{
		struct rt_buf t = {0};
		export_append_rfc3339_ns(&t, rt_realtime_ns());
		if (!t.failed && t.len < sizeof(st->start_time)) {
			rt_memcpy(st->start_time, t.data, t.len);
			st->start_time[t.len] = '\0';
		}
		rt_buf_free(&t);
	}
	if (sys_uname(&uts) == 0)
		rt_snprintf(st->kernel, sizeof(st->kernel), "%s %s %s", uts.sysname, uts.release,
			    uts.version);
	if (!export_header_safe(st->kernel))
		st->kernel[0] = '\0';
	if (st->agentless) {
		rt_strlcpy(st->target, st->ep.url.path[0] ? st->ep.url.path : "/", sizeof(st->target));
	} else {
		/* A path in DD_TRACE_AGENT_URL is kept as a prefix, as dd-trace does. */
		size_t plen = st->ep.url.scheme == EXPORT_URL_UNIX ? 0 : rt_strlen(st->ep.url.path);
		while (plen > 0 && st->ep.url.path[plen - 1] == '/')
			plen--;
		rt_snprintf(st->target, sizeof(st->target), "%.*s" AGENT_PATH, (int)plen,
			    st->ep.url.path);
	}
	if (!build_headers(st)) {
		rt_error("datadog: out of memory");
		export_endpoint_destroy(ex);
		return NULL;
	}
	if (st->agentless)
		rt_info("datadog: uploading to the intake at %s", st->ep.url.host);
	else if (st->ep.url.scheme == EXPORT_URL_UNIX)
		rt_info("datadog: uploading to the agent at unix://%s", st->ep.url.path);
	else
		rt_info("datadog: uploading to the agent at %s:%u", st->ep.url.host, st->ep.url.port);
	return ex;
}
