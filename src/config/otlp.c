/* OpenTelemetry exporter settings (see otlp.h). */
#include "config/otlp.h"

#include "rt/rt.h"

#define DEFAULT_TIMEOUT_MS 10000u
#define PROFILES_PATH "/v1development/profiles"

/* The PROFILES_ variant of a setting, else the generic one; NULL when both
 * are unset or empty. */
static const char *otlp_env(const char *suffix)
{
	char name[96];
	rt_snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_PROFILES_%s", suffix);
	const char *v = rt_getenv(name);
	if (v && *v)
		return v;
	rt_snprintf(name, sizeof(name), "OTEL_EXPORTER_OTLP_%s", suffix);
	v = rt_getenv(name);
	return v && *v ? v : NULL;
}

/* s[0..n) with %XX decoded and surrounding spaces trimmed, into out; false
 * when it does not fit, a %-escape is malformed or a control character
 * appears. */
static bool decode_part(const char *s, size_t n, char *out, size_t cap)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '%') {
			if (n - i < 3)
				return false;
			int hi = rt_hex_digit((unsigned char)s[i + 1]), lo = rt_hex_digit((unsigned char)s[i + 2]);
			if (hi < 0 || lo < 0)
				return false;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if ((unsigned char)c < 0x20 || c == 0x7f || o + 1 >= cap)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	return o > 0;
}

typedef void (*pair_fn)(void *ctx, const char *key, const char *value);

/* Calls fn for each key=value of a comma-separated list (W3C baggage
 * style, as OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS are);
 * a malformed entry is reported and skipped. */
static void for_each_pair(const char *setting, const char *list, pair_fn fn, void *ctx)
{
	const char *p = list;
	for (int guard = 0; *p && guard < 1024; guard++) {
		const char *end = p;
		while (*end && *end != ',')
			end++;
		const char *eq = p;
		while (eq < end && *eq != '=')
			eq++;
		char key[SW_CFG_STR], value[SW_CFG_STR];
		if (end > p) {
			if (eq < end && decode_part(p, (size_t)(eq - p), key, sizeof(key)) &&
			    decode_part(eq + 1, (size_t)(end - eq - 1), value, sizeof(value)))
				fn(ctx, key, value);
			else
				rt_warn("%s: ignoring malformed entry \"%.*s\"", setting, (int)(end - p), p);
		}
		p = *end ? end + 1 : end;
	}
}

static void set_attribute(struct sw_otlp_config *o, const char *key, const char *value)
{
	for (uint32_t i = 0; i < o->n_resource; i++) {
		if (rt_streq(o->resource[i].key, key)) {
			rt_strlcpy(o->resource[i].value, value, sizeof(o->resource[i].value));
			return;
		}
	}
	if (o->n_resource >= SW_OTLP_MAX_ATTRIBUTES) {
		rt_log_once(RT_LOG_WARN, "OTEL_RESOURCE_ATTRIBUTES: more than %d attributes; the "
					 "others are dropped", SW_OTLP_MAX_ATTRIBUTES);
		return;
	}
	struct sw_otlp_attribute *a = &o->resource[o->n_resource++];
	rt_strlcpy(a->key, key, sizeof(a->key));
	rt_strlcpy(a->value, value, sizeof(a->value));
}

static void resource_pair(void *ctx, const char *key, const char *value)
{
	struct sw_otlp_config *o = ctx;
	/* OTEL_SERVICE_NAME wins over the list's service.name. */
	if (rt_streq(key, "service.name") && rt_getenv("OTEL_SERVICE_NAME") &&
	    *rt_getenv("OTEL_SERVICE_NAME"))
		return;
	set_attribute(o, key, value);
}

static bool header_name_ok(const char *s)
{
	for (; *s; s++) {
		char c = *s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '-' || c == '_' || c == '.';
		if (!ok)
			return false;
	}
	return true;
}

static void header_pair(void *ctx, const char *key, const char *value)
{
	struct sw_otlp_config *o = ctx;
	if (!header_name_ok(key)) {
		rt_warn("OTEL_EXPORTER_OTLP_HEADERS: ignoring header \"%s\" (not a token)", key);
		return;
	}
	size_t used = rt_strlen(o->headers);
	size_t n = rt_snprintf(o->headers + used, sizeof(o->headers) - used, "%s: %s\r\n", key, value);
	if (n >= sizeof(o->headers) - used) {
		o->headers[used] = '\0';
		rt_log_once(RT_LOG_WARN, "OTEL_EXPORTER_OTLP_HEADERS: too long; some headers are "
					 "not sent");
	}
}

void config_otlp_load(const struct sw_config *cfg, struct sw_otlp_config *out)
{
	rt_memset(out, 0, sizeof(*out));
	const char *full = rt_getenv("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT");
	const char *base = rt_getenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	if (full && *full) {
		if (rt_strlcpy(out->endpoint, full, sizeof(out->endpoint)) >= sizeof(out->endpoint)) {
			rt_error("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT is too long: OTLP export is off");
			return;
		}
	} else if (base && *base) {
		size_t n = rt_strlen(base);
		while (n && base[n - 1] == '/')
			n--;
		size_t w = rt_snprintf(out->endpoint, sizeof(out->endpoint), "%.*s%s", (int)n, base,
				       PROFILES_PATH);
		if (w >= sizeof(out->endpoint)) {
			rt_error("OTEL_EXPORTER_OTLP_ENDPOINT is too long: OTLP export is off");
			return;
		}
	} else {
		return; /* opt-in */
	}
	const char *protocol = otlp_env("PROTOCOL");
	if (protocol && !rt_streq(protocol, "http/protobuf")) {
		rt_error("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is supported; OTLP "
			 "export is off", protocol);
		return;
	}
	const char *compression = otlp_env("COMPRESSION");
	out->gzip = true;
	if (compression && rt_streq(compression, "none"))
		out->gzip = false;
	else if (compression && !rt_streq(compression, "gzip"))
		rt_warn("OTEL_EXPORTER_OTLP_COMPRESSION=%s: using gzip", compression);
	out->timeout_ms = DEFAULT_TIMEOUT_MS;
	const char *timeout = otlp_env("TIMEOUT");
	if (timeout) {
		uint64_t ms = 0;
		if (!rt_parse_u64(timeout, rt_strlen(timeout), &ms) || ms == 0 || ms > 600000)
			rt_warn("OTEL_EXPORTER_OTLP_TIMEOUT=%s: not 1..600000 ms; using %u", timeout,
				DEFAULT_TIMEOUT_MS);
		else
			out->timeout_ms = (uint32_t)ms;
	}
	const char *ca = otlp_env("CERTIFICATE");
	if (ca)
		rt_strlcpy(out->ca_file, ca, sizeof(out->ca_file));
	const char *headers = otlp_env("HEADERS");
	if (headers)
		for_each_pair("OTEL_EXPORTER_OTLP_HEADERS", headers, header_pair, out);

	set_attribute(out, "service.name", cfg->service);
	if (cfg->version[0])
		set_attribute(out, "service.version", cfg->version);
	if (cfg->env[0])
		set_attribute(out, "deployment.environment.name", cfg->env);
	const char *attrs = rt_getenv("OTEL_RESOURCE_ATTRIBUTES");
	if (attrs && *attrs)
		for_each_pair("OTEL_RESOURCE_ATTRIBUTES", attrs, resource_pair, out);
	const char *name = rt_getenv("OTEL_SERVICE_NAME");
	if (name && *name)
		set_attribute(out, "service.name", name);
	out->enabled = true;
}
