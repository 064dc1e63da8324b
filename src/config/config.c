/* Reading the environment into one immutable configuration. */
#include "config/config.h"
#include "rt/rt.h"
#include "rt/sys.h"

struct sw_config sw_cfg;

static const char *const kind_names[SW_KIND_COUNT] = { "cpu", "wall", "alloc", "heap", "lock",
						      "exception" };

const char *sw_kind_name(enum sw_kind k)
{
	return (unsigned)k < SW_KIND_COUNT ? kind_names[k] : "unknown";
}

bool config_parse_bool(const char *s, bool *out)
{
	size_t n = rt_strlen(s);
	if (rt_eq_nocase(s, n, "true") || rt_eq_nocase(s, n, "1") || rt_eq_nocase(s, n, "yes") ||
	    rt_eq_nocase(s, n, "on")) {
		*out = true;
		return true;
	}
	if (n == 0 || rt_eq_nocase(s, n, "false") || rt_eq_nocase(s, n, "0") ||
	    rt_eq_nocase(s, n, "no") || rt_eq_nocase(s, n, "off")) {
		*out = false;
		return true;
	}
	return false;
}

bool config_parse_u32_range(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;
	if (!rt_parse_u64(s, rt_strnlen(s, 32), &v) || v < lo || v > hi)
		return false;
	*out = (uint32_t)v;
	return true;
}

bool config_parse_pct_ppm(const char *s, uint32_t lo_ppm, uint32_t hi_ppm, uint32_t *out)
{
	/* "D", "D." or "D.dddd": whole percent, then at most 4 decimals. */
	size_t n = rt_strnlen(s, 32), i = 0;
	uint64_t ppm = 0;
	for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		ppm = ppm * 10u + (uint64_t)(s[i] - '0');
		if (ppm > 100u)
			return false;
	}
	if (i == 0)
		return false;
	ppm *= 10000u;
	if (i < n && s[i] == '.') {
		uint64_t unit = 1000u;
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
			if (unit == 0)
				return false;
			ppm += (uint64_t)(s[i] - '0') * unit;
			unit /= 10u;
		}
	}
	if (i != n || ppm < lo_ppm || ppm > hi_ppm)
		return false;
	*out = (uint32_t)ppm;
	return true;
}

bool config_parse_thresholds(const char *s, uint32_t *out, uint32_t max, uint32_t *n)
{
	uint32_t vals[SW_MEMORY_THRESHOLDS_MAX];
	uint32_t count = 0;
	size_t len = rt_strnlen(s, 256), start = 0;
	if (len == 256 || max > SW_MEMORY_THRESHOLDS_MAX)
		return false;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && s[i] != ',')
			continue;
		size_t a = start, b = i;
		start = i + 1;
		while (a < b && s[a] == ' ')
			a++;
		while (b > a && s[b - 1] == ' ')
			b--;
		char item[32];
		if (b == a || b - a >= sizeof(item) || count == max)
			return false;
		rt_memcpy(item, s + a, b - a);
		item[b - a] = 0;
		uint32_t ppm;
		if (!config_parse_pct_ppm(item, 1, 1000000, &ppm))
			return false;
		/* insertion into the ascending list, dropping duplicates */
		uint32_t at = 0;
		while (at < count && vals[at] < ppm)
			at++;
		if (at < count && vals[at] == ppm)
			continue;
		for (uint32_t k = count; k > at; k--)
			vals[k] = vals[k - 1];
		vals[at] = ppm;
		count++;
	}
	if (count == 0)
		return false;
	rt_memcpy(out, vals, count * sizeof(vals[0]));
	*n = count;
	return true;
}

bool config_parse_bytes(const char *s, uint64_t *out)
{
	size_t n = rt_strnlen(s, 32), digits = 0;
	while (digits < n && s[digits] >= '0' && s[digits] <= '9')
		digits++;
	uint64_t v;
	if (digits == 0 || digits > 19 || !rt_parse_u64(s, digits, &v))
		return false;
	const char *unit = s + digits;
	size_t ulen = n - digits;
	unsigned shift = 0;
	if (ulen > 0) {
		static const char letters[] = "kmgt";
		char c = (char)(unit[0] | 0x20);
		const char *at = rt_memchr(letters, c, 4);
		if (!at && !(ulen == 1 && c == 'b'))
			return false;
		if (at) {
			shift = 10u * (unsigned)(at - letters + 1);
			if (!(ulen == 1 || (ulen == 2 && (unit[1] | 0x20) == 'b') ||
			      (ulen == 2 && unit[1] == 'i') ||
			      (ulen == 3 && unit[1] == 'i' && (unit[2] | 0x20) == 'b')))
				return false;
		}
	}
	if (v == 0 || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = v << shift;
	return true;
}

bool config_parse_kinds(const char *s, uint32_t *out)
{
	uint32_t bits = 0;
	size_t n = rt_strnlen(s, 1024);
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ',')
			continue;
		size_t len = i - start;
		/* tolerate spaces around names */
		while (len && s[start] == ' ') {
			start++;
			len--;
		}
		while (len && s[start + len - 1] == ' ')
			len--;
		bool found = false;
		for (unsigned k = 0; k < SW_KIND_COUNT && len; k++) {
			if (rt_eq_nocase(s + start, len, kind_names[k])) {
				bits |= SW_KIND_BIT(k);
				found = true;
			}
		}
		if (!found)
			return false;
		start = i + 1;
	}
	if (!bits)
		return false;
	*out = bits;
	return true;
}

static bool tag_char_ok(char c) { return c > ' ' && c != ',' && c != 0x7f; }

bool config_normalize_tags(const char *s, char *out, size_t cap, unsigned *dropped)
{
	size_t o = 0, n = rt_strnlen(s, 1u << 20);
	bool fits = true;
	*dropped = 0;
	if (cap == 0)
		return false;
	for (size_t i = 0; i < n;) {
		while (i < n && (s[i] == ',' || s[i] == ' '))
			i++;
		size_t start = i;
		bool ok = true;
		while (i < n && s[i] != ',' && s[i] != ' ') {
			ok = ok && tag_char_ok(s[i]);
			i++;
		}
		size_t len = i - start;
		if (len == 0)
			continue;
		if (!ok || s[start] == ':') {
			(*dropped)++;
			continue;
		}
		size_t need = len + (o ? 1 : 0);
		if (!fits || o + need >= cap) {
			fits = false;
			(*dropped)++;
			continue;
		}
		if (o)
			out[o++] = ',';
		rt_memcpy(out + o, s + start, len);
		o += len;
	}
	out[o] = 0;
	return fits;
}

static bool is_preload_separator(char c) { return c == ':' || c == ' ' || c == '\t' || c == '\n'; }

unsigned config_filter_preload(const char *value, char *out,
			       bool (*is_self)(const char *entry, size_t len), bool *left)
{
	size_t o = 0;
	unsigned dropped = 0;
	const char *p = value;
	while (*p) {
		while (*p && is_preload_separator(*p))
			p++;
		const char *start = p;
		while (*p && !is_preload_separator(*p))
			p++;
		size_t len = (size_t)(p - start);
		if (len == 0)
			continue;
		if (is_self(start, len)) {
			dropped++;
			continue;
		}
		if (o > 0)
			out[o++] = ':';
		rt_memcpy(out + o, start, len);
		o += len;
	}
	out[o] = 0;
	*left = o > 0;
	return dropped;
}

/* Copies an environment string into a fixed field, warning when it does not fit. */
static void copy_setting(const char *name, const char *value, char *field, size_t cap)
{
	if (rt_strlcpy(field, value, cap) >= cap)
		rt_warn("%s is longer than %zu bytes; truncated", name, cap - 1);
}

static const char *env_nonempty(const char *name)
{
	const char *v = rt_getenv(name);
	return v && *v ? v : NULL;
}

static void load_u32(const char *name, uint32_t lo, uint32_t hi, uint32_t dflt, uint32_t *field)
{
	const char *v = env_nonempty(name);
	*field = dflt;
	if (v && !config_parse_u32_range(v, lo, hi, field)) {
		rt_warn("%s=\"%.*s\" is not a whole number in %u..%u; using %u", name, 64, v, lo, hi,
			dflt);
		*field = dflt;
	}
}

#define OVERHEAD_PPM_MIN 100u      /* 0.01% */
#define OVERHEAD_PPM_MAX 1000000u  /* 100% */
#define OVERHEAD_PPM_DEFAULT 20000u /* 2% */

static void load_overhead_limit(struct sw_config *cfg)
{
	const char *v = env_nonempty("STOWAWAY_MAX_OVERHEAD_PCT");
	cfg->max_overhead_ppm = OVERHEAD_PPM_DEFAULT;
	if (v && !config_parse_pct_ppm(v, OVERHEAD_PPM_MIN, OVERHEAD_PPM_MAX, &cfg->max_overhead_ppm)) {
		rt_warn("STOWAWAY_MAX_OVERHEAD_PCT=\"%.*s\" is not a percentage in 0.01..100 (at most "
			"4 decimals); using 2", 64, v);
		cfg->max_overhead_ppm = OVERHEAD_PPM_DEFAULT;
	}
}

static void load_bool(const char *name, bool dflt, bool *field)
{
	const char *v = rt_getenv(name);
	*field = dflt;
	if (v && *v && !config_parse_bool(v, field)) {
		rt_warn("%s=\"%.*s\" is not true or false; using %s", name, 64, v,
			dflt ? "true" : "false");
		*field = dflt;
	}
}

static void load_memory_guard(struct sw_config *cfg)
{
	static const uint32_t defaults[] = { 800000, 900000, 950000 };
	load_bool("STOWAWAY_MEMORY_GUARD", true, &cfg->memory_guard);
	rt_memcpy(cfg->memory_thresholds_ppm, defaults, sizeof(defaults));
	cfg->n_memory_thresholds = RT_ARRAY_LEN(defaults);
	const char *v = env_nonempty("STOWAWAY_MEMORY_THRESHOLDS");
	if (v && !config_parse_thresholds(v, cfg->memory_thresholds_ppm, SW_MEMORY_THRESHOLDS_MAX,
					  &cfg->n_memory_thresholds)) {
		rt_warn("STOWAWAY_MEMORY_THRESHOLDS=\"%.*s\" is not a list of up to %d percentages "
			"in 1..100; using 80,90,95", 64, v, SW_MEMORY_THRESHOLDS_MAX);
		rt_memcpy(cfg->memory_thresholds_ppm, defaults, sizeof(defaults));
		cfg->n_memory_thresholds = RT_ARRAY_LEN(defaults);
	}
	v = env_nonempty("STOWAWAY_MEMORY_RSS_LIMIT");
	if (v && !config_parse_bytes(v, &cfg->memory_rss_limit)) {
		rt_warn("STOWAWAY_MEMORY_RSS_LIMIT=\"%.*s\" is not a size such as 512M or 2G; no "
			"RSS limit", 64, v);
		cfg->memory_rss_limit = 0;
	}
}

static bool url_scheme_ok(const char *url)
{
	return rt_starts_with(url, "http://") || rt_starts_with(url, "https://") ||
	       rt_starts_with(url, "unix://");
}

static void load_agent(struct sw_config *cfg)
{
	const char *url = env_nonempty("DD_TRACE_AGENT_URL");
	const char *host = env_nonempty("DD_AGENT_HOST");
	const char *port_s = env_nonempty("DD_TRACE_AGENT_PORT");
	bool agentless = false;
	load_bool("DD_PROFILING_AGENTLESS", false, &agentless);
	bool agent_given = url || host || port_s;

	const char *key = env_nonempty("DD_API_KEY");
	if (key)
		copy_setting("DD_API_KEY", key, cfg->api_key, sizeof(cfg->api_key));
	const char *site = env_nonempty("DD_SITE");
	copy_setting("DD_SITE", site ? site : "datadoghq.com", cfg->site, sizeof(cfg->site));
	const char *intake = env_nonempty("STOWAWAY_INTAKE_URL");
	if (intake)
		copy_setting("STOWAWAY_INTAKE_URL", intake, cfg->intake_url, sizeof(cfg->intake_url));
	else
		rt_snprintf(cfg->intake_url, sizeof(cfg->intake_url),
			    "https://intake.profile.%s/api/v2/profile", cfg->site);
	const char *ca = env_nonempty("STOWAWAY_CA_FILE");
	if (ca)
		copy_setting("STOWAWAY_CA_FILE", ca, cfg->ca_file, sizeof(cfg->ca_file));
	if (agentless && !key) {
		rt_warn("DD_PROFILING_AGENTLESS is set but DD_API_KEY is not; using the agent");
		agentless = false;
	}
	/* As in dd-trace-go and dd-trace-rb: the key alone never selects the
	 * intake; the agent adds its own key. */
	cfg->api_key_ignored_for_agent = key && !agentless && !agent_given;
	if (!agentless)
		cfg->api_key[0] = 0; /* never send ours to an agent */
	const char *sock = env_nonempty("STOWAWAY_AGENT_SOCKET");
	copy_setting("STOWAWAY_AGENT_SOCKET", sock ? sock : "/var/run/datadog/apm.socket",
		     cfg->agent_socket, sizeof(cfg->agent_socket));
	const char *xenv = env_nonempty("DD_EXTERNAL_ENV");
	if (xenv)
		copy_setting("DD_EXTERNAL_ENV", xenv, cfg->external_env, sizeof(cfg->external_env));
	const char *cgf = env_nonempty("STOWAWAY_CGROUP_FILE");
	if (cgf)
		copy_setting("STOWAWAY_CGROUP_FILE", cgf, cfg->cgroup_file, sizeof(cfg->cgroup_file));
	const char *cgm = env_nonempty("STOWAWAY_CGROUP_MOUNT");
	if (cgm)
		copy_setting("STOWAWAY_CGROUP_MOUNT", cgm, cfg->cgroup_mount, sizeof(cfg->cgroup_mount));

	if (url && !url_scheme_ok(url)) {
		rt_warn("DD_TRACE_AGENT_URL=\"%.*s\" is not http://, https:// or unix://; ignored",
			128, url);
		url = NULL;
	}
	if (url) {
		copy_setting("DD_TRACE_AGENT_URL", url, cfg->agent_url, sizeof(cfg->agent_url));
	} else if (!host && !port_s && sys_faccessat(AT_FDCWD, cfg->agent_socket, 0 /* F_OK */) == 0) {
		/* dd-trace libraries prefer the agent's socket when it exists. */
		rt_snprintf(cfg->agent_url, sizeof(cfg->agent_url), "unix://%s", cfg->agent_socket);
	} else {
		uint32_t port = 8126;
		if (port_s && !config_parse_u32_range(port_s, 1, 65535, &port)) {
			rt_warn("DD_TRACE_AGENT_PORT=\"%.*s\" is not a port number; using 8126", 32,
				port_s);
			port = 8126;
		}
		if (!host)
			host = "localhost";
		bool v6 = rt_strchr(host, ':') != NULL && host[0] != '[';
		rt_snprintf(cfg->agent_url, sizeof(cfg->agent_url), "http://%s%.*s%s:%u",
			    v6 ? "[" : "", 200, host, v6 ? "]" : "", port);
	}
	/* Without any sink configured, the agent on localhost is the default, as
	 * in every Datadog library; with only files, Pyroscope or an OTLP
	 * endpoint (config/otlp.h), no agent. */
	bool other_sink = cfg->output_dir[0] || cfg->pyroscope_url[0] ||
			  env_nonempty("OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT") ||
			  env_nonempty("OTEL_EXPORTER_OTLP_ENDPOINT");
	cfg->agent_enabled = !agentless && (agent_given || !other_sink);
}

void config_load(struct sw_config *cfg, const char *program)
{
	rt_memset(cfg, 0, sizeof(*cfg));
	const char *level = env_nonempty("STOWAWAY_LOG_LEVEL");
	cfg->log_level = RT_LOG_WARN;
	if (level) {
		static const char *const names[] = { "error", "warn", "info", "debug" };
		int found = -1;
		for (int k = 0; k < 4; k++)
			if (rt_eq_nocase(level, rt_strlen(level), names[k]))
				found = k;
		if (found < 0)
			rt_warn("STOWAWAY_LOG_LEVEL=\"%.*s\" is not error, warn, info or debug; "
				"using warn", 32, level);
		else
			cfg->log_level = found;
	}
	rt_log_set_level((enum rt_log_level)cfg->log_level);

	const char *enabled = rt_getenv("DD_PROFILING_ENABLED");
	if (enabled && !config_parse_bool(enabled, &cfg->enabled)) {
		rt_warn("DD_PROFILING_ENABLED=\"%.*s\" is not true or false; profiling stays off", 32,
			enabled);
		cfg->enabled = false;
	}

	cfg->kinds = SW_KINDS_DEFAULT;
	const char *kinds = env_nonempty("STOWAWAY_PROFILES");
	if (kinds && !config_parse_kinds(kinds, &cfg->kinds)) {
		rt_warn("STOWAWAY_PROFILES=\"%.*s\" is not a list of cpu,wall,alloc,heap,lock,"
			"exception; using cpu,wall,alloc,heap", 128, kinds);
		cfg->kinds = SW_KINDS_DEFAULT;
	}

	const char *service = env_nonempty("DD_SERVICE");
	copy_setting("DD_SERVICE", service ? service : (program && *program ? program : "native"),
		     cfg->service, sizeof(cfg->service));
	const char *v = env_nonempty("DD_ENV");
	if (v)
		copy_setting("DD_ENV", v, cfg->env, sizeof(cfg->env));
	v = env_nonempty("DD_VERSION");
	if (v)
		copy_setting("DD_VERSION", v, cfg->version, sizeof(cfg->version));
	v = env_nonempty("DD_TAGS");
	if (v) {
		unsigned dropped = 0;
		bool fits = config_normalize_tags(v, cfg->tags, sizeof(cfg->tags), &dropped);
		if (!fits)
			rt_warn("DD_TAGS is longer than %zu bytes; %u tags dropped",
				sizeof(cfg->tags) - 1, dropped);
		else if (dropped)
			rt_warn("DD_TAGS has %u malformed entries; they are ignored", dropped);
	}

	load_u32("DD_PROFILING_UPLOAD_PERIOD", 1, 3600, 60, &cfg->upload_period_s);
	load_u32("STOWAWAY_EXIT_TIMEOUT_MS", 0, 60000, 2000, &cfg->exit_timeout_ms);
	v = env_nonempty("STOWAWAY_OUTPUT_DIR");
	if (v)
		copy_setting("STOWAWAY_OUTPUT_DIR", v, cfg->output_dir, sizeof(cfg->output_dir));
	load_u32("STOWAWAY_MAX_FILES", 0, 1000000, 1000, &cfg->max_files);

	v = env_nonempty("STOWAWAY_PYROSCOPE_URL");
	if (v && !(rt_starts_with(v, "http://") || rt_starts_with(v, "https://"))) {
		rt_warn("STOWAWAY_PYROSCOPE_URL=\"%.*s\" is not an http(s) URL; ignored", 128, v);
		v = NULL;
	}
	if (v)
		copy_setting("STOWAWAY_PYROSCOPE_URL", v, cfg->pyroscope_url, sizeof(cfg->pyroscope_url));
	v = env_nonempty("STOWAWAY_PYROSCOPE_AUTH_TOKEN");
	if (v)
		copy_setting("STOWAWAY_PYROSCOPE_AUTH_TOKEN", v, cfg->pyroscope_token,
			     sizeof(cfg->pyroscope_token));
	v = env_nonempty("STOWAWAY_PYROSCOPE_BASIC_AUTH");
	if (v)
		copy_setting("STOWAWAY_PYROSCOPE_BASIC_AUTH", v, cfg->pyroscope_basic_auth,
			     sizeof(cfg->pyroscope_basic_auth));
	v = env_nonempty("STOWAWAY_PYROSCOPE_TENANT_ID");
	if (v)
		copy_setting("STOWAWAY_PYROSCOPE_TENANT_ID", v, cfg->pyroscope_tenant,
			     sizeof(cfg->pyroscope_tenant));

	load_u32("STOWAWAY_PYROSCOPE_MAX_SAMPLES", 2, 1u << 22, 16000, &cfg->pyroscope_max_samples);
	load_u32("STOWAWAY_PYROSCOPE_MAX_BYTES", 4096, 1u << 30, 4u * 1024 * 1024,
		 &cfg->pyroscope_max_bytes);
	load_bool("STOWAWAY_PYROSCOPE_THREAD_ID", false, &cfg->pyroscope_thread_ids);
	load_agent(cfg);
	load_u32("STOWAWAY_HTTP_TIMEOUT_MS", 100, 60000, 5000, &cfg->http_timeout_ms);

	load_u32("STOWAWAY_CPU_HZ", 1, 1000, 100, &cfg->cpu_hz);
	load_u32("STOWAWAY_WALL_HZ", 1, 1000, 100, &cfg->wall_hz);
	load_u32("STOWAWAY_WALL_MAX_THREADS", 1, 4096, 32, &cfg->wall_max_threads);
	load_u32("STOWAWAY_MAX_FRAMES", 8, 1024, 128, &cfg->max_frames);
	uint32_t sample_bytes;
	load_u32("STOWAWAY_ALLOC_SAMPLE_BYTES", 1, 1u << 30, 512 * 1024, &sample_bytes);
	cfg->alloc_sample_bytes = sample_bytes;
	load_u32("STOWAWAY_MAX_STACKS", 16, 1u << 22, 65536, &cfg->max_stacks);
	load_overhead_limit(cfg);
	load_u32("STOWAWAY_LOCK_SAMPLE_NS", 1, 4000000000u, 10000000u, &cfg->lock_sample_ns);
	v = env_nonempty("STOWAWAY_DEBUG_DIRS");
	if (v)
		copy_setting("STOWAWAY_DEBUG_DIRS", v, cfg->debug_dirs, sizeof(cfg->debug_dirs));
	load_u32("STOWAWAY_DEBUG_MEMORY_MB", 0, 4096, 64, &cfg->debug_memory_mb);
	load_u32("STOWAWAY_LOCK_CHECK_EVERY", 1, 1u << 20, 65536, &cfg->lock_check_every);
	load_u32("STOWAWAY_EXCEPTION_SAMPLE_EVERY", 1, 1000000000u, 20, &cfg->exception_sample_every);
	load_bool("STOWAWAY_FOLLOW_EXEC", true, &cfg->follow_exec);
	load_bool("STOWAWAY_CHILDREN_TO_PARENT", true, &cfg->children_to_parent);
	load_bool("DD_PROFILING_TIMELINE_ENABLED", true, &cfg->timeline);
	load_u32("STOWAWAY_TIMELINE_MAX_SAMPLES", 0, cfg->max_stacks, cfg->max_stacks / 2,
		 &cfg->timeline_max_samples);
	load_memory_guard(cfg);
}
