/* One immutable configuration, read once from the environment.
 *
 * Every setting has a safe default; a malformed value is reported with one
 * "stowaway:" line and replaced by the default.  After config_load() the
 * struct is never written again (a fork child reuses it as is).
 */
#ifndef STOWAWAY_CONFIG_H
#define STOWAWAY_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/* Profile kinds: one output file per kind per period. */
enum sw_kind {
	SW_KIND_CPU = 0,
	SW_KIND_WALL,
	SW_KIND_ALLOC,
	SW_KIND_HEAP,
	SW_KIND_LOCK,
	SW_KIND_EXCEPTION,
	SW_KIND_COUNT
};
#define SW_KIND_BIT(k) (1u << (k))
#define SW_KINDS_DEFAULT                                                       \
	(SW_KIND_BIT(SW_KIND_CPU) | SW_KIND_BIT(SW_KIND_WALL) |                \
	 SW_KIND_BIT(SW_KIND_ALLOC) | SW_KIND_BIT(SW_KIND_HEAP))
/* "cpu", "wall", ... as used in STOWAWAY_PROFILES and file names. */
const char *sw_kind_name(enum sw_kind k);

#define SW_CFG_STR 256      /* service, env, version, hosts, ... */
#define SW_CFG_PATH 1024    /* paths and URLs */
#define SW_CFG_TAGS 4096    /* DD_TAGS after validation */
#define SW_MEMORY_THRESHOLDS_MAX 8

struct sw_config {
	bool enabled;             /* DD_PROFILING_ENABLED */
	int log_level;            /* STOWAWAY_LOG_LEVEL: error|warn|info|debug (enum rt_log_level) */
	uint32_t kinds;           /* STOWAWAY_PROFILES: bit set of SW_KIND_BIT */

	char service[SW_CFG_STR]; /* DD_SERVICE, default: program name */
	char env[SW_CFG_STR];     /* DD_ENV */
	char version[SW_CFG_STR]; /* DD_VERSION */
	/* DD_TAGS normalised to "k:v,k:v" (comma separated, no spaces), bounded. */
	char tags[SW_CFG_TAGS];

	uint32_t upload_period_s; /* DD_PROFILING_UPLOAD_PERIOD, default 60, 1..3600 */
	uint32_t exit_timeout_ms; /* STOWAWAY_EXIT_TIMEOUT_MS, default 2000 */

	/* Files (air-gapped).  Empty output_dir: no file exporter. */
	char output_dir[SW_CFG_PATH]; /* STOWAWAY_OUTPUT_DIR */
	uint32_t max_files;           /* STOWAWAY_MAX_FILES, default 1000, 0 = unbounded */

	/* Datadog agent.  agent_url is "http://host:port" or "unix:///path";
	 * built from DD_TRACE_AGENT_URL, else DD_AGENT_HOST + DD_TRACE_AGENT_PORT. */
	bool agent_enabled;          /* true when any agent setting was given, or no other sink */
	char agent_url[SW_CFG_PATH];
	/* The agent's default unix socket (STOWAWAY_AGENT_SOCKET, default
	 * /var/run/datadog/apm.socket), used when no agent setting is given and
	 * it exists. */
	char agent_socket[SW_CFG_PATH];
	/* DD_API_KEY was set without DD_PROFILING_AGENTLESS=true and no agent
	 * setting: profiles go to the agent (older versions used the intake). */
	bool api_key_ignored_for_agent;
	char external_env[SW_CFG_STR]; /* DD_EXTERNAL_ENV: Datadog-External-Env header */
	char cgroup_file[SW_CFG_PATH];  /* STOWAWAY_CGROUP_FILE, default /proc/self/cgroup */
	char cgroup_mount[SW_CFG_PATH]; /* STOWAWAY_CGROUP_MOUNT, default /sys/fs/cgroup */

	/* Agentless intake: only with DD_PROFILING_AGENTLESS=true and DD_API_KEY. */
	char api_key[SW_CFG_STR];       /* DD_API_KEY: never logged */
	char site[SW_CFG_STR];          /* DD_SITE, default datadoghq.com */
	char intake_url[SW_CFG_PATH];   /* STOWAWAY_INTAKE_URL, else https://intake.profile.$DD_SITE/api/v2/profile */
	char ca_file[SW_CFG_PATH];      /* STOWAWAY_CA_FILE */

	/* Pyroscope: STOWAWAY_PYROSCOPE_URL, _AUTH_TOKEN (bearer), _BASIC_AUTH (user:pass), _TENANT_ID */
	char pyroscope_url[SW_CFG_PATH];
	char pyroscope_token[SW_CFG_STR];
	char pyroscope_basic_auth[SW_CFG_STR];
	char pyroscope_tenant[SW_CFG_STR];
	uint32_t pyroscope_max_samples; /* STOWAWAY_PYROSCOPE_MAX_SAMPLES, default 16000 */
	uint32_t pyroscope_max_bytes;   /* STOWAWAY_PYROSCOPE_MAX_BYTES uncompressed, default 4 MiB */
	bool pyroscope_thread_ids;      /* STOWAWAY_PYROSCOPE_THREAD_ID: a thread_id label, default false */

	uint32_t http_timeout_ms; /* STOWAWAY_HTTP_TIMEOUT_MS, default 5000 */

	/* Collectors */
	uint32_t cpu_hz;             /* STOWAWAY_CPU_HZ, default 100, 1..1000 */
	uint32_t wall_hz;            /* STOWAWAY_WALL_HZ, default 100, 1..1000 */
	uint32_t wall_max_threads;   /* STOWAWAY_WALL_MAX_THREADS per tick, default 32 */
	uint32_t max_frames;         /* STOWAWAY_MAX_FRAMES, default 128, 8..1024 */
	uint64_t alloc_sample_bytes; /* STOWAWAY_ALLOC_SAMPLE_BYTES, default 524288 */
	uint32_t max_stacks;         /* STOWAWAY_MAX_STACKS distinct samples per period, default 65536 */
	uint32_t max_overhead_ppm;   /* STOWAWAY_MAX_OVERHEAD_PCT in parts per million of application CPU, default 20000 (2%) */
	uint32_t lock_sample_ns;     /* STOWAWAY_LOCK_SAMPLE_NS mean wait per sample, default 10 ms */

	/* Symbols: extra roots searched for separate debug files before
	 * /usr/lib/debug (':'-separated), and the memory one module's DWARF
	 * index may hold (0: no line numbers or inlined frames). */
	char debug_dirs[SW_CFG_PATH];  /* STOWAWAY_DEBUG_DIRS */
	uint32_t debug_memory_mb;      /* STOWAWAY_DEBUG_MEMORY_MB, default 64, 0..4096 */
	uint32_t lock_check_every;   /* STOWAWAY_LOCK_CHECK_EVERY most acquisitions per check, default 65536 */
	uint32_t exception_sample_every; /* STOWAWAY_EXCEPTION_SAMPLE_EVERY, default 20 */
	bool follow_exec;            /* STOWAWAY_FOLLOW_EXEC, default true */
	bool children_to_parent;     /* STOWAWAY_CHILDREN_TO_PARENT, default true */
	bool timeline;               /* DD_PROFILING_TIMELINE_ENABLED, default true */
	uint32_t timeline_max_samples; /* STOWAWAY_TIMELINE_MAX_SAMPLES per period, default max_stacks/2 */

	/* Memory guard (collect/memguard.h) */
	bool memory_guard;           /* STOWAWAY_MEMORY_GUARD, default true */
	/* STOWAWAY_MEMORY_THRESHOLDS percentages of the limit, ascending, in ppm; default 80,90,95 */
	uint32_t memory_thresholds_ppm[SW_MEMORY_THRESHOLDS_MAX];
	uint32_t n_memory_thresholds;
	uint64_t memory_rss_limit;   /* STOWAWAY_MEMORY_RSS_LIMIT bytes, used without a cgroup limit; 0 = none */
};

/* The process-wide configuration (zeroed until config_load runs). */
extern struct sw_config sw_cfg;

/* Reads the environment into sw_cfg.  Never fails: bad values are logged
 * and replaced by defaults.  `program` names the host program (for the
 * default service). */
void config_load(struct sw_config *cfg, const char *program);

/* Parsers shared with tests and fuzz targets (all bounded, no allocation).
 * Each returns false, and leaves *out untouched, on malformed input. */
bool config_parse_bool(const char *s, bool *out);
bool config_parse_u32_range(const char *s, uint32_t lo, uint32_t hi, uint32_t *out);
/* A percentage with at most 4 decimals ("2", "0.5", "0.0125") -> parts per
 * million (2% = 20000), within [lo_ppm, hi_ppm]; false otherwise. */
bool config_parse_pct_ppm(const char *s, uint32_t lo_ppm, uint32_t hi_ppm, uint32_t *out);
/* "cpu,wall" -> bit set; false on any unknown or empty entry. */
bool config_parse_kinds(const char *s, uint32_t *out);
/* "80,90,95" (percentages, up to 4 decimals, 1..100) -> ascending distinct
 * ppm values; false on an empty list, a bad entry or more than max. */
bool config_parse_thresholds(const char *s, uint32_t *out, uint32_t max, uint32_t *n);
/* "512M", "2G", "1048576", "64KiB" (K, M, G, T: powers of 1024, optional
 * "i"/"iB"/"B") -> bytes; false on malformed input, 0 or overflow. */
bool config_parse_bytes(const char *s, uint64_t *out);
/* DD_TAGS ("k:v,k:v" or space separated) -> normalised into out (cap bytes).
 * Drops malformed entries (logged by the caller via *dropped); false if the
 * result would not fit, in which case out holds the entries that fit. */
bool config_normalize_tags(const char *s, char *out, size_t cap, unsigned *dropped);
/* An LD_PRELOAD value (entries separated by ':' or white space) without the
 * entries `is_self` accepts, joined by ':' into out, which needs
 * strlen(value) + 1 bytes: the result is never longer than the value.
 * Returns how many entries were left out; *left tells whether any remain. */
unsigned config_filter_preload(const char *value, char *out,
			       bool (*is_self)(const char *entry, size_t len), bool *left);

#endif
