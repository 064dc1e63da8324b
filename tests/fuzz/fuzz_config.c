/* Fuzzes the parsers of outside input that the environment and /proc feed:
 * every setting parser, config_load over an environment built from the
 * input, the LD_PRELOAD filter (STOWAWAY_FOLLOW_EXEC=false) and the
 * /proc/self/task/TID/syscall line parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_env.h"

#include "collect/wall.h"
#include "config/config.h"

static const char *const names[] = {
	"DD_PROFILING_ENABLED", "DD_SERVICE", "DD_ENV", "DD_VERSION", "DD_TAGS",
	"DD_AGENT_HOST", "DD_TRACE_AGENT_PORT", "DD_TRACE_AGENT_URL", "DD_API_KEY", "DD_SITE",
	"DD_PROFILING_UPLOAD_PERIOD", "DD_PROFILING_AGENTLESS", "STOWAWAY_OUTPUT_DIR",
	"STOWAWAY_PROFILES", "STOWAWAY_LOG_LEVEL", "STOWAWAY_MAX_FILES", "STOWAWAY_CPU_HZ",
	"STOWAWAY_WALL_HZ", "STOWAWAY_MAX_FRAMES", "STOWAWAY_ALLOC_SAMPLE_BYTES",
	"STOWAWAY_PYROSCOPE_URL", "STOWAWAY_INTAKE_URL", "STOWAWAY_EXIT_TIMEOUT_MS",
	"STOWAWAY_FOLLOW_EXEC", "STOWAWAY_MAX_OVERHEAD_PCT", "STOWAWAY_LOCK_SAMPLE_NS",
	"STOWAWAY_LOCK_CHECK_EVERY",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

/* The filter's stand-in for "this entry is our library": names ending in
 * "stowaway.so". */
static bool ends_in_stowaway(const char *entry, size_t len)
{
	static const char tail[] = "stowaway.so";
	return len >= sizeof(tail) - 1 && memcmp(entry + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1) == 0;
}

/* Filters text as an LD_PRELOAD value and checks what it promises: no
 * longer than the input, no empty entry, no separator but ':', no entry of
 * ours left, and every other entry kept in order. */
static void check_preload_filter(const char *text, size_t size)
{
	char *out = malloc(size + 1);
	if (!out)
		return;
	bool left;
	unsigned dropped = config_filter_preload(text, out, ends_in_stowaway, &left);
	size_t n = strlen(out);
	if (n > strlen(text) || left != (n > 0) || (n && (out[0] == ':' || out[n - 1] == ':')) ||
	    strstr(out, "::") || strpbrk(out, " \t\n"))
		abort();
	unsigned ours = 0;
	const char *o = out;
	for (const char *p = text; *p;) {
		size_t sep = strspn(p, ": \t\n");
		p += sep;
		size_t len = strcspn(p, ": \t\n");
		if (len == 0)
			break;
		if (ends_in_stowaway(p, len)) {
			ours++;
		} else {
			if (strncmp(o, p, len) != 0 || (o[len] != ':' && o[len] != 0))
				abort();
			o += len + (o[len] == ':');
		}
		p += len;
	}
	if (ours != dropped || *o != 0)
		abort();
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;

	/* The parsers, one by one, on the whole input. */
	bool b;
	uint32_t u, kinds;
	unsigned dropped;
	char tags[256];
	(void)config_parse_bool(text, &b);
	(void)config_parse_u32_range(text, 1, 3600, &u);
	(void)config_parse_kinds(text, &kinds);
	(void)config_parse_pct_ppm(text, 100, 1000000, &u);
	(void)config_normalize_tags(text, tags, sizeof(tags), &dropped);
	check_preload_filter(text, strlen(text));
	struct wall_syscall_info si;
	if (wall_parse_syscall(text, size, &si))
		(void)wall_state_name(wall_state_of_syscall(0, si.nr, si.arg0));
	uint64_t run_delay, timeslices;
	(void)wall_parse_schedstat(text, size, &run_delay, &timeslices);

	/* The whole configuration: input lines are values of the settings, in
	 * order (a value may be empty); then config_load, quietly. */
	fuzz_set_env_lines(names, N_NAMES, text);
	setenv("STOWAWAY_LOG_LEVEL", "error", 1);
	static struct sw_config cfg;
	config_load(&cfg, "fuzz");
	free(text);
	return 0;
}
