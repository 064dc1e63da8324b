/* Memory guard; see memguard.h. */
#include "collect/memguard.h"

#include "rt/host.h"
#include "rt/rt.h"
#include "rt/sys.h"
#include "rt/thread.h"

#define PROC_TEXT_MAX (64 * 1024)
#define MAX_DEPTH 64
/* v1 reports "no limit" as PAGE_COUNTER_MAX pages in bytes (just under 2^63). */
#define V1_NO_LIMIT (1ull << 62)
#define POLL_SLOW_NS 250000000ull
#define POLL_NEAR_NS 100000000ull
#define POLL_CLOSE_NS 50000000ull
#define POLL_MIN_NS 10000000ull
#define OOM_CHECK_NS RT_NS_PER_SEC

const char *memguard_source_name(enum memguard_source s)
{
	switch (s) {
	case MEMGUARD_CGROUP_V2: return "cgroup v2";
	case MEMGUARD_CGROUP_V1: return "cgroup v1";
	case MEMGUARD_RSS: return "RSS";
	default: return "none";
	}
}

/* ---- parsers ---- */

/* Splits text into lines; returns false at the end. */
static bool next_line(const char *text, size_t n, size_t *pos, const char **line, size_t *len)
{
	if (*pos >= n)
		return false;
	const char *nl = rt_memchr(text + *pos, '\n', n - *pos);
	size_t end = nl ? (size_t)(nl - text) : n;
	*line = text + *pos;
	*len = end - *pos;
	*pos = nl ? end + 1 : n;
	return true;
}

/* True when the comma-separated list s[0..n) has an item equal to word. */
static bool list_has(const char *s, size_t n, const char *word)
{
	size_t wl = rt_strlen(word), start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != ',')
			continue;
		if (i - start == wl && rt_memcmp(s + start, word, wl) == 0)
			return true;
		start = i + 1;
	}
	return false;
}

static bool copy_field(const char *s, size_t n, char *out, size_t cap)
{
	if (n >= cap)
		return false;
	rt_memcpy(out, s, n);
	out[n] = 0;
	return true;
}

bool memguard_parse_cgroup_path(const char *text, size_t n, bool v2, char *out, size_t cap)
{
	size_t pos = 0, len;
	const char *line;
	while (next_line(text, n, &pos, &line, &len)) {
		const char *c1 = rt_memchr(line, ':', len);
		if (!c1)
			continue;
		size_t rest = len - (size_t)(c1 + 1 - line);
		const char *c2 = rt_memchr(c1 + 1, ':', rest);
		if (!c2)
			continue;
		const char *ctl = c1 + 1;
		size_t ctl_len = (size_t)(c2 - ctl);
		const char *path = c2 + 1;
		size_t plen = len - (size_t)(path - line);
		bool match = v2 ? (c1 - line == 1 && line[0] == '0' && ctl_len == 0)
				: list_has(ctl, ctl_len, "memory");
		if (match && plen > 0 && path[0] == '/')
			return copy_field(path, plen, out, cap);
	}
	return false;
}

/* Copies a mountinfo field, decoding the kernel's \ooo escapes. */
static bool copy_unescaped(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\\' && n - i > 3) {
			int v = 0;
			bool ok = true;
			for (size_t k = 1; ok && k <= 3; k++) {
				if (s[i + k] < '0' || s[i + k] > '7')
					ok = false;
				else
					v = v * 8 + (s[i + k] - '0');
			}
			if (ok && v > 0 && v < 256) {
				c = (char)v;
				i += 3;
			}
		}
		if (o + 1 >= cap)
			return false;
		out[o++] = c;
	}
	if (cap == 0)
		return false;
	out[o] = 0;
	return true;
}

/* The next space-separated word of line[*at..len); false at the end. */
static bool next_word(const char *line, size_t len, size_t *at, const char **word, size_t *wlen)
{
	size_t i = *at;
	while (i < len && line[i] == ' ')
		i++;
	size_t s = i;
	while (i < len && line[i] != ' ')
		i++;
	*at = i;
	*word = line + s;
	*wlen = i - s;
	return i > s;
}

bool memguard_parse_mount(const char *text, size_t n, bool v2, char *root, size_t root_cap,
			  char *mount, size_t mount_cap)
{
	size_t pos = 0, len;
	const char *line;
	while (next_line(text, n, &pos, &line, &len)) {
		/* id parent major:minor root mountpoint options [optional...] - fstype source super */
		const char *f[6];
		size_t fl[6], nf = 0, at = 0;
		while (nf < 6 && next_word(line, len, &at, &f[nf], &fl[nf]))
			nf++;
		if (nf < 6)
			continue;
		/* the separator " - " after the optional fields */
		bool found = false;
		const char *w;
		size_t wl;
		for (size_t guard = 0; guard < 64 && next_word(line, len, &at, &w, &wl); guard++) {
			if (wl == 1 && w[0] == '-') {
				found = true;
				break;
			}
		}
		if (!found)
			continue;
		const char *g[3];
		size_t gl[3], ng = 0;
		while (ng < 3 && next_word(line, len, &at, &g[ng], &gl[ng]))
			ng++;
		if (ng < 1)
			continue;
		bool match;
		if (v2)
			match = gl[0] == 7 && rt_memcmp(g[0], "cgroup2", 7) == 0;
		else
			match = gl[0] == 6 && rt_memcmp(g[0], "cgroup", 6) == 0 && ng == 3 &&
				list_has(g[2], gl[2], "memory");
		if (!match)
			continue;
		if (fl[3] == 0 || f[3][0] != '/' || fl[4] == 0 || f[4][0] != '/')
			continue;
		return copy_unescaped(f[3], fl[3], root, root_cap) &&
		       copy_unescaped(f[4], fl[4], mount, mount_cap);
	}
	return false;
}

static size_t trim_newline(const char *text, size_t n)
{
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
		n--;
	return n;
}

bool memguard_parse_limit(const char *text, size_t n, uint64_t *out)
{
	n = trim_newline(text, n);
	if (n == 3 && rt_memcmp(text, "max", 3) == 0) {
		*out = MEMGUARD_UNLIMITED;
		return true;
	}
	uint64_t v;
	if (!rt_parse_u64(text, n, &v))
		return false;
	*out = v >= V1_NO_LIMIT ? MEMGUARD_UNLIMITED : v;
	return true;
}

bool memguard_parse_usage(const char *text, size_t n, uint64_t *out)
{
	return rt_parse_u64(text, trim_newline(text, n), out);
}

bool memguard_parse_oom_kills(const char *text, size_t n, uint64_t *out)
{
	size_t pos = 0, len;
	const char *line;
	static const char key[] = "oom_kill ";
	while (next_line(text, n, &pos, &line, &len)) {
		size_t kl = sizeof(key) - 1;
		if (len > kl && rt_memcmp(line, key, kl) == 0)
			return rt_parse_u64(line + kl, trim_newline(line + kl, len - kl), out);
	}
	return false;
}

bool memguard_parse_statm_rss(const char *text, size_t n, uint64_t page_size, uint64_t *out)
{
	size_t i = 0;
	while (i < n && text[i] != ' ')
		i++;
	if (i == 0 || i >= n)
		return false;
	size_t s = ++i;
	while (i < n && text[i] >= '0' && text[i] <= '9')
		i++;
	uint64_t pages;
	if (i == s || !rt_parse_u64(text + s, i - s, &pages) || (i < n && text[i] != ' ' &&
								 text[i] != '\n'))
		return false;
	if (page_size && pages > UINT64_MAX / page_size)
		return false;
	*out = pages * page_size;
	return true;
}

bool memguard_cgroup_dir(const char *prefix, const char *mount, const char *root,
			 const char *path, char *out, size_t cap)
{
	size_t rl = rt_strlen(root);
	const char *rel = "";
	if (rl == 1 && root[0] == '/')
		rel = path;
	else if (rt_strncmp(path, root, rl) == 0 && (path[rl] == '/' || path[rl] == 0))
		rel = path + rl;
	/* A path leaving the namespace ("/../x") names nothing we can see. */
	if (rt_starts_with(rel, "/..") || rt_streq(rel, "/"))
		rel = "";
	size_t ml = rt_strlen(mount);
	if (ml > 1 && mount[ml - 1] == '/')
		ml--;
	size_t need = rt_snprintf(out, cap, "%s%.*s%s", prefix, (int)ml, mount, rel);
	return need < cap;
}

/* ---- locating the limit ---- */

static bool read_value(const char *dir, const char *file, char *buf, size_t cap, long *len)
{
	char path[MEMGUARD_PATH_MAX + 64];
	if (rt_snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return false;
	*len = rt_read_file(path, buf, cap);
	return *len > 0;
}

static bool locate_in(const char *prefix, bool v2, const char *cgroup_text, size_t cgroup_len,
		      const char *mountinfo_text, size_t mountinfo_len, struct memguard_limit *out)
{
	char path[MEMGUARD_PATH_MAX], root[MEMGUARD_PATH_MAX], mount[MEMGUARD_PATH_MAX];
	char dir[MEMGUARD_PATH_MAX], top[MEMGUARD_PATH_MAX];
	if (!memguard_parse_cgroup_path(cgroup_text, cgroup_len, v2, path, sizeof(path)) ||
	    !memguard_parse_mount(mountinfo_text, mountinfo_len, v2, root, sizeof(root), mount,
				  sizeof(mount)) ||
	    !memguard_cgroup_dir(prefix, mount, root, path, dir, sizeof(dir)) ||
	    !memguard_cgroup_dir(prefix, mount, "/", "", top, sizeof(top)))
		return false;
	size_t top_len = rt_strlen(top);
	const char *file = v2 ? "memory.max" : "memory.limit_in_bytes";
	bool found = false;
	for (int depth = 0; depth < MAX_DEPTH; depth++) {
		char buf[64];
		long len;
		uint64_t limit;
		if (read_value(dir, file, buf, sizeof(buf), &len) &&
		    memguard_parse_limit(buf, (size_t)len, &limit) && limit != MEMGUARD_UNLIMITED &&
		    (!found || limit < out->limit)) {
			found = true;
			out->limit = limit;
			out->source = v2 ? MEMGUARD_CGROUP_V2 : MEMGUARD_CGROUP_V1;
			rt_strlcpy(out->dir, dir, sizeof(out->dir));
		}
		size_t dl = rt_strlen(dir);
		if (dl <= top_len)
			break;
		while (dl > top_len && dir[dl - 1] != '/')
			dl--;
		if (dl > top_len)
			dl--; /* drop the '/' too */
		dir[dl] = 0;
	}
	return found;
}

bool memguard_locate(const char *prefix, const char *cgroup_text, size_t cgroup_len,
		     const char *mountinfo_text, size_t mountinfo_len, struct memguard_limit *out)
{
	rt_memset(out, 0, sizeof(*out));
	out->limit = MEMGUARD_UNLIMITED;
	if (locate_in(prefix, true, cgroup_text, cgroup_len, mountinfo_text, mountinfo_len, out))
		return true;
	if (locate_in(prefix, false, cgroup_text, cgroup_len, mountinfo_text, mountinfo_len, out))
		return true;
	rt_memset(out, 0, sizeof(*out));
	out->limit = MEMGUARD_UNLIMITED;
	return false;
}

/* ---- thresholds ---- */

static uint64_t threshold_bytes(const struct memguard_state *s, unsigned i)
{
	/* limit * ppm / 1e6 without overflow for any 64-bit limit */
	uint64_t l = s->limit, p = s->thresholds_ppm[i];
	return (l / 1000000u) * p + (l % 1000000u) * p / 1000000u;
}

void memguard_state_init(struct memguard_state *s, const uint32_t *thresholds_ppm, unsigned n,
			 uint64_t limit)
{
	rt_memset(s, 0, sizeof(*s));
	s->n = RT_MIN(n, (unsigned)SW_MEMORY_THRESHOLDS_MAX);
	rt_memcpy(s->thresholds_ppm, thresholds_ppm, s->n * sizeof(uint32_t));
	s->limit = limit;
}

void memguard_step(struct memguard_state *s, uint64_t usage, struct memguard_trigger *t)
{
	rt_memset(t, 0, sizeof(*t));
	t->usage = usage;
	t->limit = s->limit;
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t at = threshold_bytes(s, i);
		if (usage < at) {
			if (s->peak[i])
				s->dropped[i] = true;
			continue;
		}
		bool never = s->peak[i] == 0;
		bool new_high = s->dropped[i] && usage > s->peak[i];
		if (!s->fired_period[i] && (never || new_high)) {
			s->fired_period[i] = true;
			s->dropped[i] = false;
			t->fired = true;
			t->threshold_ppm = s->thresholds_ppm[i];
		}
		if (usage > s->peak[i])
			s->peak[i] = usage; /* every reading above it, exported or held back */
	}
}

void memguard_prime(struct memguard_state *s, uint64_t usage)
{
	for (unsigned i = 0; i < s->n; i++)
		if (usage >= threshold_bytes(s, i) && usage > s->peak[i])
			s->peak[i] = usage;
}

void memguard_new_period(struct memguard_state *s)
{
	for (unsigned i = 0; i < s->n; i++)
		s->fired_period[i] = false;
}

uint64_t memguard_interval_ns(const struct memguard_state *s, uint64_t usage, uint64_t prev_usage,
			      uint64_t dt_ns)
{
	uint64_t next = s->limit;
	for (unsigned i = 0; i < s->n; i++) {
		uint64_t at = threshold_bytes(s, i);
		if (at > usage) {
			next = at;
			break;
		}
	}
	uint64_t gap = next > usage ? next - usage : 0;
	uint64_t tenth = s->limit / 10, twentieth = s->limit / 20;
	uint64_t interval = gap > tenth ? POLL_SLOW_NS : gap > twentieth ? POLL_NEAR_NS : POLL_CLOSE_NS;
	if (usage > prev_usage && dt_ns > 0) {
		/* at the growth of the last interval, reach the next threshold in eta */
		double rate = (double)(usage - prev_usage) / (double)dt_ns;
		double eta = (double)gap / rate;
		if (eta / 4 < (double)interval)
			interval = eta / 4 < (double)POLL_MIN_NS ? POLL_MIN_NS : (uint64_t)(eta / 4);
	}
	return interval;
}

/* ---- the watcher ---- */

static struct {
	bool on;
	enum memguard_source source;
	char dir[MEMGUARD_PATH_MAX];
	int usage_fd; /* memory.current, memory.usage_in_bytes or /proc/self/statm */
	int oom_fd;   /* memory.events or memory.oom_control; -1 if none */
	uint64_t page_size;
	struct memguard_state st;
	uint32_t thresholds_ppm[SW_MEMORY_THRESHOLDS_MAX];
	unsigned n_thresholds;
	uint64_t prev_usage, prev_ns, next_oom_check_ns;
	uint64_t oom_kills, oom_reported;
	bool oom_known;
	bool read_failed_logged;
	/* The descriptors live in the scheduler thread's own table (a fork
	 * child has none of them: its new scheduler opens them again). */
	bool private_files;
	/* Looked and found nothing to watch: a fork child (same cgroup, same
	 * settings) does not read /proc/self/cgroup and mountinfo again. */
	bool nothing_found;
} mg = { .usage_fd = -1, .oom_fd = -1 };

static int open_in(const char *dir, const char *file)
{
	char path[MEMGUARD_PATH_MAX + 64];
	if (rt_snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	return (int)sys_open(path, O_RDONLY, 0);
}

/* Opens the usage and OOM files of the source in mg.dir; the usage file's
 * descriptor or -errno (the OOM file is optional). */
static int open_files(void)
{
	if (mg.source == MEMGUARD_RSS) {
		mg.usage_fd = (int)sys_open("/proc/self/statm", O_RDONLY, 0);
		mg.oom_fd = -1;
		return mg.usage_fd;
	}
	bool v2 = mg.source == MEMGUARD_CGROUP_V2;
	mg.usage_fd = open_in(mg.dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	mg.oom_fd = open_in(mg.dir, v2 ? "memory.events" : "memory.oom_control");
	if (mg.usage_fd < 0) {
		if (mg.oom_fd >= 0)
			(void)sys_close(mg.oom_fd);
		int err = mg.usage_fd;
		mg.usage_fd = mg.oom_fd = -1;
		return err;
	}
	if (mg.oom_fd < 0)
		mg.oom_fd = -1;
	return mg.usage_fd;
}

static bool pread_text(int fd, char *buf, size_t cap, size_t *len)
{
	long r;
	do
		r = sys_pread(fd, buf, cap - 1, 0);
	while (r == -EINTR);
	if (r <= 0)
		return false;
	buf[r] = 0;
	*len = (size_t)r;
	return true;
}

static bool read_oom_kills(uint64_t *out)
{
	char buf[1024];
	size_t len;
	return mg.oom_fd >= 0 && pread_text(mg.oom_fd, buf, sizeof(buf), &len) &&
	       memguard_parse_oom_kills(buf, len, out);
}

static bool read_usage(uint64_t *out)
{
	char buf[256];
	size_t len;
	if (!pread_text(mg.usage_fd, buf, sizeof(buf), &len))
		return false;
	if (mg.source == MEMGUARD_RSS)
		return memguard_parse_statm_rss(buf, len, mg.page_size, out);
	return memguard_parse_usage(buf, len, out);
}

static void format_mib(char *out, size_t cap, uint64_t bytes)
{
	uint64_t tenths = bytes * 10 / (1024 * 1024);
	rt_snprintf(out, cap, "%llu.%llu MiB", (unsigned long long)(tenths / 10),
		    (unsigned long long)(tenths % 10));
}

bool memguard_start(const struct sw_config *cfg)
{
	mg.private_files = thread_has_private_files((int)sys_gettid());
	if (mg.on && mg.usage_fd < 0 && open_files() < 0)
		mg.on = false; /* a fork child's scheduler, whose files went with the parent's */
	if (mg.on)
		return true;
	if (!cfg->memory_guard || mg.nothing_found)
		return false;
	char *cg = rt_malloc(PROC_TEXT_MAX), *mi = rt_malloc(PROC_TEXT_MAX);
	struct memguard_limit lim;
	rt_memset(&lim, 0, sizeof(lim));
	bool found = false;
	if (cg && mi) {
		long cl = rt_read_file("/proc/self/cgroup", cg, PROC_TEXT_MAX);
		long ml = rt_read_file("/proc/self/mountinfo", mi, PROC_TEXT_MAX);
		found = cl > 0 && ml > 0 && memguard_locate("", cg, (size_t)cl, mi, (size_t)ml, &lim);
	}
	rt_free(cg);
	rt_free(mi);
	mg.page_size = host_page_size();
	if (found) {
		/* lim.source and lim.dir as memguard_locate found them */
	} else if (cfg->memory_rss_limit) {
		lim.source = MEMGUARD_RSS;
		lim.limit = cfg->memory_rss_limit;
		rt_strlcpy(lim.dir, "/proc/self", sizeof(lim.dir));
	} else {
		rt_info("memory guard: no cgroup memory limit visible and no "
			"STOWAWAY_MEMORY_RSS_LIMIT; not watching memory");
		mg.nothing_found = true;
		return false;
	}
	mg.source = lim.source;
	rt_strlcpy(mg.dir, lim.dir, sizeof(mg.dir));
	int opened = open_files();
	if (opened < 0) {
		rt_warn("memory guard: cannot open the usage file in %s (error %d); not watching "
			"memory", lim.dir, -opened);
		return false;
	}
	mg.n_thresholds = RT_MIN(cfg->n_memory_thresholds, (uint32_t)SW_MEMORY_THRESHOLDS_MAX);
	rt_memcpy(mg.thresholds_ppm, cfg->memory_thresholds_ppm, mg.n_thresholds * sizeof(uint32_t));
	memguard_state_init(&mg.st, mg.thresholds_ppm, mg.n_thresholds, lim.limit);
	mg.oom_known = read_oom_kills(&mg.oom_kills);
	mg.oom_reported = mg.oom_kills;
	mg.prev_usage = 0;
	mg.prev_ns = 0;
	mg.on = true;
	char limit_s[32];
	format_mib(limit_s, sizeof(limit_s), lim.limit);
	rt_info("memory guard: watching the %s memory limit of %s (%s)",
		memguard_source_name(lim.source), lim.dir, limit_s);
	return true;
}

uint64_t memguard_poll(uint64_t now_ns, struct memguard_trigger *t)
{
	rt_memset(t, 0, sizeof(*t));
	if (!mg.on)
		return UINT64_MAX;
	uint64_t usage;
	if (!read_usage(&usage)) {
		if (!mg.read_failed_logged) {
			mg.read_failed_logged = true;
			rt_warn("memory guard: cannot read the memory usage in %s; retrying once "
				"a second", mg.dir);
		}
		return now_ns + RT_NS_PER_SEC;
	}
	if (mg.prev_ns == 0)
		memguard_prime(&mg.st, usage); /* levels reached before we watched: no crossing */
	else
		memguard_step(&mg.st, usage, t);
	if (mg.oom_fd >= 0 && (t->fired || now_ns >= mg.next_oom_check_ns)) {
		uint64_t kills;
		if (read_oom_kills(&kills)) {
			if (mg.oom_known && kills > mg.oom_kills)
				rt_log_once(RT_LOG_WARN, "memory guard: a process in %s was OOM-killed "
					    "(oom_kill counter %llu); the next profile says so",
					    mg.dir, (unsigned long long)kills);
			mg.oom_kills = kills;
			if (!mg.oom_known)
				mg.oom_reported = kills;
			mg.oom_known = true;
		}
		mg.next_oom_check_ns = now_ns + OOM_CHECK_NS;
	}
	uint64_t dt = mg.prev_ns ? now_ns - mg.prev_ns : 0;
	uint64_t interval = memguard_interval_ns(&mg.st, usage, mg.prev_usage, dt);
	mg.prev_usage = usage;
	mg.prev_ns = now_ns;
	return now_ns + interval;
}

void memguard_period_begin(void)
{
	if (mg.on)
		memguard_new_period(&mg.st);
}

void memguard_describe(const struct memguard_trigger *t, char *out, size_t cap)
{
	char usage_s[32], limit_s[32];
	format_mib(usage_s, sizeof(usage_s), t->usage);
	format_mib(limit_s, sizeof(limit_s), t->limit);
	uint32_t ppm = t->threshold_ppm;
	rt_snprintf(out, cap,
		    "memory trigger: usage crossed %u.%02u%% of the %s memory limit: %s of %s "
		    "(usage_bytes=%llu limit_bytes=%llu) in %s",
		    ppm / 10000, (ppm % 10000) / 100, memguard_source_name(mg.source), usage_s,
		    limit_s, (unsigned long long)t->usage, (unsigned long long)t->limit, mg.dir);
}

void memguard_tags(const struct memguard_trigger *t, char *out, size_t cap)
{
	uint32_t ppm = t->threshold_ppm;
	rt_snprintf(out, cap,
		    "trigger:memory,memory_threshold_pct:%u.%02u,memory_usage_bytes:%llu,"
		    "memory_limit_bytes:%llu,memory_limit_source:%s",
		    ppm / 10000, (ppm % 10000) / 100, (unsigned long long)t->usage,
		    (unsigned long long)t->limit,
		    mg.source == MEMGUARD_CGROUP_V2   ? "cgroup_v2"
		    : mg.source == MEMGUARD_CGROUP_V1 ? "cgroup_v1"
						      : "rss");
}

bool memguard_take_oom_note(char *out, size_t cap)
{
	if (!mg.on || !mg.oom_known || mg.oom_kills <= mg.oom_reported)
		return false;
	rt_snprintf(out, cap,
		    "memory: %llu OOM kill(s) in %s since the previous profile (oom_kill counter "
		    "%llu)",
		    (unsigned long long)(mg.oom_kills - mg.oom_reported), mg.dir,
		    (unsigned long long)mg.oom_kills);
	mg.oom_reported = mg.oom_kills;
	return true;
}

void memguard_after_fork_child(void)
{
	if (!mg.on)
		return;
	uint64_t parent_usage = mg.prev_usage, parent_ns = mg.prev_ns;
	memguard_state_init(&mg.st, mg.thresholds_ppm, mg.n_thresholds, mg.st.limit);
	/* The child is watched from the fork on, though its first reading
	 * comes once it has lived a while (the scheduler starts the guard
	 * then): the levels its parent's last reading had reached are its
	 * starting point, and what it grows past them meanwhile is a crossing
	 * of its own (a worker that allocates at once used to start above a
	 * threshold and never cross it). */
	if (parent_ns != 0) {
		memguard_prime(&mg.st, parent_usage);
		mg.prev_usage = parent_usage;
		mg.prev_ns = rt_monotonic_ns();
	} else {
		mg.prev_usage = 0;
		mg.prev_ns = 0;
	}
	/* The child's scheduler opens its own (memguard_start): /proc/self
	 * named the parent when they were opened, and from the scheduler's
	 * private table they did not come along.  Copies inherited in this
	 * table (the parent's scheduler shared it) are closed. */
	if (!mg.private_files) {
		(void)sys_close(mg.usage_fd);
		if (mg.oom_fd >= 0)
			(void)sys_close(mg.oom_fd);
	}
	mg.usage_fd = mg.oom_fd = -1;
}
