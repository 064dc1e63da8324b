/* Memory guard: watches how close this process's cgroup is to its memory
 * limit, so the scheduler can export the live heap before an OOM kill.
 *
 * The limit is found without privileges: /proc/self/cgroup names the
 * process's cgroup, /proc/self/mountinfo where its hierarchy is mounted
 * (the namespace root inside a container, the full path on a host).  cgroup
 * v2 (memory.max, memory.current, memory.events) is tried first, then v1
 * (memory.limit_in_bytes, memory.usage_in_bytes, memory.oom_control).  Of
 * the cgroup and its visible ancestors, the one with the smallest limit is
 * watched.  Without any limit, the process's RSS is watched against
 * STOWAWAY_MEMORY_RSS_LIMIT if the user set one; otherwise nothing is.
 *
 * Watching is pull-based and cheap: the scheduler thread calls
 * memguard_poll() when memguard_poll() last asked it to; each poll is one
 * pread of a kept-open descriptor (a second one for the OOM counter near the
 * limit), a few per second, faster as usage nears the next threshold.
 *
 * Thresholds (memguard_step): a threshold fires when usage reaches it, at
 * most once per upload period.  After it fired it fires again only after
 * usage dropped below it and then rose above the highest usage ever seen
 * above it (a new high-water mark), so usage hovering around a threshold
 * costs one export, not one per period.  A new high held back by the
 * once-per-period rule fires in a later period if usage is higher still.
 */
#ifndef STOWAWAY_COLLECT_MEMGUARD_H
#define STOWAWAY_COLLECT_MEMGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define MEMGUARD_PATH_MAX 512
#define MEMGUARD_UNLIMITED UINT64_MAX

enum memguard_source {
	MEMGUARD_NONE = 0,
	MEMGUARD_CGROUP_V2,
	MEMGUARD_CGROUP_V1,
	MEMGUARD_RSS,
};
/* "cgroup v2", "cgroup v1", "RSS", "none". */
const char *memguard_source_name(enum memguard_source s);

/* ---- parsers of outside text (bounded, no allocation, never trust input) ---- */

/* The memory cgroup's path from /proc/self/cgroup text: v2 the "0::PATH"
 * line, v1 the line whose controller list contains "memory".  false if none
 * or it does not fit in cap. */
bool memguard_parse_cgroup_path(const char *text, size_t n, bool v2, char *out, size_t cap);
/* From /proc/self/mountinfo text, the first mount of the hierarchy: v2 a
 * "cgroup2" file system, v1 a "cgroup" one whose super options list
 * "memory".  Its root (in the hierarchy) and mount point, octal escapes
 * (\040) decoded.  false if none or a field does not fit. */
bool memguard_parse_mount(const char *text, size_t n, bool v2, char *root, size_t root_cap,
			  char *mount, size_t mount_cap);
/* memory.max / memory.limit_in_bytes: "max" or a v1 value of 2^62 or more
 * (the kernel's "no limit", page-rounded) -> MEMGUARD_UNLIMITED.  A trailing
 * newline is allowed. */
bool memguard_parse_limit(const char *text, size_t n, uint64_t *out);
/* memory.current / memory.usage_in_bytes: one decimal, optional newline. */
bool memguard_parse_usage(const char *text, size_t n, uint64_t *out);
/* The "oom_kill N" line of memory.events (v2) or memory.oom_control (v1). */
bool memguard_parse_oom_kills(const char *text, size_t n, uint64_t *out);
/* /proc/self/statm: resident pages (second field) times page_size. */
bool memguard_parse_statm_rss(const char *text, size_t n, uint64_t page_size, uint64_t *out);

/* The directory the cgroup's files are in: prefix + mount point + the part
 * of the cgroup path below the mount's root (the mount point itself when the
 * path is not below it, as in a cgroup namespace).  false if it does not fit. */
bool memguard_cgroup_dir(const char *prefix, const char *mount, const char *root,
			 const char *path, char *out, size_t cap);

/* Where the limit is: the directory of the limiting cgroup and its limit. */
struct memguard_limit {
	enum memguard_source source;
	uint64_t limit;
	char dir[MEMGUARD_PATH_MAX];
};
/* Finds the smallest limit among the cgroup and its ancestors up to the
 * mount point, v2 then v1, reading files under `prefix` ("" on a live
 * system; a fixture tree in tests).  cgroup_text and mountinfo_text are the
 * contents of /proc/self/cgroup and /proc/self/mountinfo.  false (source
 * MEMGUARD_NONE) when no finite limit is visible. */
bool memguard_locate(const char *prefix, const char *cgroup_text, size_t cgroup_len,
		     const char *mountinfo_text, size_t mountinfo_len, struct memguard_limit *out);

/* ---- thresholds ---- */

struct memguard_trigger {
	bool fired;
	uint32_t threshold_ppm; /* the highest threshold this crossing reached */
	uint64_t usage, limit;
};

struct memguard_state {
	uint32_t thresholds_ppm[SW_MEMORY_THRESHOLDS_MAX]; /* ascending */
	unsigned n;
	uint64_t limit;
	uint64_t peak[SW_MEMORY_THRESHOLDS_MAX];   /* highest usage seen above it; 0: never fired */
	bool dropped[SW_MEMORY_THRESHOLDS_MAX];    /* usage went below it since it fired */
	bool fired_period[SW_MEMORY_THRESHOLDS_MAX];
};

void memguard_state_init(struct memguard_state *s, const uint32_t *thresholds_ppm, unsigned n,
			 uint64_t limit);
/* One usage reading; fills *t (t->fired false when nothing fires). */
void memguard_step(struct memguard_state *s, uint64_t usage, struct memguard_trigger *t);
/* The first reading (at start, or in a fork child): thresholds already
 * exceeded count as crossed at that level, so a process started in a nearly
 * full cgroup exports nothing until usage drops and then climbs above it,
 * or reaches a higher threshold. */
void memguard_prime(struct memguard_state *s, uint64_t usage);
/* A new upload period: each threshold may fire once more. */
void memguard_new_period(struct memguard_state *s);
/* Nanoseconds until the next reading: 250 ms while the next threshold is
 * more than 10% of the limit away, 100 ms within 10%, 50 ms within 5%; and
 * at most a quarter of the time the growth since the previous reading
 * (taken dt_ns earlier) would take to reach it, down to 10 ms. */
uint64_t memguard_interval_ns(const struct memguard_state *s, uint64_t usage, uint64_t prev_usage,
			      uint64_t dt_ns);

/* ---- the watcher (scheduler thread only) ---- */

/* Finds the limit and opens the files to watch; false (after an info line
 * saying why) when there is nothing to watch or the guard is off. */
bool memguard_start(const struct sw_config *cfg);
/* Reads usage; fills *t; returns the monotonic time of the next poll. */
uint64_t memguard_poll(uint64_t now_ns, struct memguard_trigger *t);
void memguard_period_begin(void);
/* The comment line describing a trigger (for profiles and the log). */
void memguard_describe(const struct memguard_trigger *t, char *out, size_t cap);
/* Datadog-style tags of a trigger: "trigger:memory,memory_threshold_pct:80,...". */
void memguard_tags(const struct memguard_trigger *t, char *out, size_t cap);
/* When the cgroup's OOM-kill counter moved since the last profile: a
 * comment line for the next profile (true once per movement). */
bool memguard_take_oom_note(char *out, size_t cap);
/* In a fork child: forgets the parent's thresholds state. */
void memguard_after_fork_child(void);

#endif
