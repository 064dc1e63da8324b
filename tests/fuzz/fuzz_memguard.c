/* Fuzzes the memory guard's parsers of /proc and cgroup files: the input is
 * split at the first NUL into /proc/self/cgroup and /proc/self/mountinfo
 * text; every parser also sees the whole input as a value file, and the
 * paths found are joined as the guard joins them. */
#include <stdint.h>
#include <string.h>

#include "collect/memguard.h"
#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(text, 0, size);
	size_t a = nul ? (size_t)(nul - text) : size;
	const char *b_text = nul ? nul + 1 : text + size;
	size_t b = nul ? size - a - 1 : 0;
	char path[MEMGUARD_PATH_MAX], root[MEMGUARD_PATH_MAX], mnt[MEMGUARD_PATH_MAX];
	char dir[MEMGUARD_PATH_MAX];
	for (int v2 = 0; v2 < 2; v2++) {
		bool have_path = memguard_parse_cgroup_path(text, a, v2, path, sizeof(path));
		if (have_path && (path[0] != '/' || strlen(path) >= sizeof(path)))
			__builtin_trap();
		bool have_mount = memguard_parse_mount(b_text, b, v2, root, sizeof(root), mnt,
						       sizeof(mnt));
		if (have_mount && (strlen(root) >= sizeof(root) || strlen(mnt) >= sizeof(mnt)))
			__builtin_trap();
		if (have_path && have_mount &&
		    memguard_cgroup_dir("", mnt, root, path, dir, sizeof(dir)) &&
		    strlen(dir) >= sizeof(dir))
			__builtin_trap();
	}
	uint64_t v;
	(void)memguard_parse_limit(text, size, &v);
	(void)memguard_parse_usage(text, size, &v);
	(void)memguard_parse_oom_kills(text, size, &v);
	(void)memguard_parse_statm_rss(text, size, 4096, &v);
	/* settings: NUL-terminated copies */
	char setting[300];
	size_t n = a < sizeof(setting) - 1 ? a : sizeof(setting) - 1;
	memcpy(setting, text, n);
	setting[n] = 0;
	uint32_t t[SW_MEMORY_THRESHOLDS_MAX], count = 0;
	if (config_parse_thresholds(setting, t, SW_MEMORY_THRESHOLDS_MAX, &count)) {
		if (count == 0 || count > SW_MEMORY_THRESHOLDS_MAX)
			__builtin_trap();
		for (uint32_t i = 0; i < count; i++)
			if (t[i] == 0 || t[i] > 1000000 || (i && t[i] <= t[i - 1]))
				__builtin_trap();
		/* the thresholds against arbitrary readings never fire twice a period */
		struct memguard_state s;
		struct memguard_trigger trig;
		memguard_state_init(&s, t, count, size * 4096 + 1);
		unsigned fired = 0;
		for (size_t i = 0; i < size && i < 256; i++) {
			memguard_step(&s, (uint64_t)data[i] * 8192, &trig);
			fired += trig.fired;
			(void)memguard_interval_ns(&s, (uint64_t)data[i] * 8192, 0, 1000);
		}
		if (fired > count)
			__builtin_trap();
	}
	(void)config_parse_bytes(setting, &v);
	return 0;
}
