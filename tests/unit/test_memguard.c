/* Memory guard: cgroup/proc parsers, locating the limit in fixture trees
 * (v2, v1, nested, namespace root, hybrid), thresholds and poll cadence,
 * and the settings' parsers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "collect/memguard.h"
#include "config/config.h"

#define MIB (1024ull * 1024ull)
#define S(lit) lit, sizeof(lit) - 1

static char fixture[256];

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s%s", fixture, rel);
	for (char *p = path + strlen(fixture) + 1; *p; p++) {
		if (*p == '/') {
			*p = 0;
			(void)mkdir(path, 0755);
			*p = '/';
		}
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static void new_fixture(void)
{
	snprintf(fixture, sizeof(fixture), "/tmp/stowaway-memguard-XXXXXX");
	if (!mkdtemp(fixture)) {
		perror("mkdtemp");
		exit(1);
	}
}

static void drop_fixture(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fixture);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", fixture);
}

static void test_cgroup_path(void)
{
	char out[128];
	static const char v1[] = "12:pids:/x\n4:cpu,memory:/kube/pod1/ctr\n0::/unified\n";
	CHECK(memguard_parse_cgroup_path(S(v1), false, out, sizeof(out)));
	CHECK(strcmp(out, "/kube/pod1/ctr") == 0);
	CHECK(memguard_parse_cgroup_path(S(v1), true, out, sizeof(out)));
	CHECK(strcmp(out, "/unified") == 0);
	static const char memsw[] = "4:memoryx:/a\n5:xmemory:/b\n";
	CHECK(!memguard_parse_cgroup_path(S(memsw), false, out, sizeof(out)));
	CHECK(!memguard_parse_cgroup_path(S("0::/a\n"), false, out, sizeof(out)));
	CHECK(!memguard_parse_cgroup_path(S("10::/a\n"), true, out, sizeof(out)));
	CHECK(!memguard_parse_cgroup_path(S("0::relative\n"), true, out, sizeof(out)));
	CHECK(!memguard_parse_cgroup_path(S("0::/toolong/path\n"), true, out, 5));
	CHECK(!memguard_parse_cgroup_path(S("garbage"), true, out, sizeof(out)));
	CHECK(memguard_parse_cgroup_path(S("0::/"), true, out, sizeof(out)) && strcmp(out, "/") == 0);
}

static void test_mount(void)
{
	char root[128], mnt[128];
	static const char mi[] =
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
		"35 31 0:32 /docker/abc /sys/fs/cgroup/mem\\040ory rw,relatime shared:12 master:3 - "
		"cgroup cgroup rw,memory\n"
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	CHECK(memguard_parse_mount(S(mi), false, root, sizeof(root), mnt, sizeof(mnt)));
	CHECK(strcmp(root, "/docker/abc") == 0);
	CHECK(strcmp(mnt, "/sys/fs/cgroup/mem ory") == 0);
	CHECK(memguard_parse_mount(S(mi), true, root, sizeof(root), mnt, sizeof(mnt)));
	CHECK(strcmp(root, "/") == 0 && strcmp(mnt, "/sys/fs/cgroup/unified") == 0);
	static const char none[] = "1 2 3 / /x rw - cgroup cgroup rw,cpu\n1 2 3 / /y rw\n";
	CHECK(!memguard_parse_mount(S(none), false, root, sizeof(root), mnt, sizeof(mnt)));
	CHECK(!memguard_parse_mount(S(none), true, root, sizeof(root), mnt, sizeof(mnt)));
	CHECK(!memguard_parse_mount(S(mi), false, root, sizeof(root), mnt, 8));
}

static void test_values(void)
{
	uint64_t v = 0;
	CHECK(memguard_parse_limit(S("max\n"), &v) && v == MEMGUARD_UNLIMITED);
	CHECK(memguard_parse_limit(S("201326592\n"), &v) && v == 201326592);
	CHECK(memguard_parse_limit(S("9223372036854771712\n"), &v) && v == MEMGUARD_UNLIMITED);
	CHECK(!memguard_parse_limit(S("-1\n"), &v));
	CHECK(!memguard_parse_limit(S(""), &v));
	CHECK(!memguard_parse_limit(S("99999999999999999999999"), &v));
	CHECK(memguard_parse_usage(S("5275648\n"), &v) && v == 5275648);
	CHECK(!memguard_parse_usage(S("12 34\n"), &v));
	CHECK(memguard_parse_oom_kills(S("low 0\nhigh 0\nmax 12\noom 2\noom_kill 3\n"), &v) && v == 3);
	CHECK(memguard_parse_oom_kills(S("oom_kill_disable 0\nunder_oom 0\noom_kill 7\n"), &v) &&
	      v == 7);
	CHECK(!memguard_parse_oom_kills(S("oom_kill_disable 0\nunder_oom 0\n"), &v));
	CHECK(memguard_parse_statm_rss(S("1000 250 30 4 0 80 0\n"), 4096, &v) && v == 250 * 4096);
	CHECK(!memguard_parse_statm_rss(S("1000\n"), 4096, &v));
	CHECK(!memguard_parse_statm_rss(S("1000 x 3\n"), 4096, &v));
}

static void test_dir(void)
{
	char out[256];
	CHECK(memguard_cgroup_dir("", "/sys/fs/cgroup", "/", "/a/b", out, sizeof(out)));
	CHECK(strcmp(out, "/sys/fs/cgroup/a/b") == 0);
	/* inside a cgroup namespace: the mount is the namespace root */
	CHECK(memguard_cgroup_dir("", "/sys/fs/cgroup", "/", "/", out, sizeof(out)));
	CHECK(strcmp(out, "/sys/fs/cgroup") == 0);
	/* Docker on v1 without a namespace: the mount's root is the container's cgroup */
	CHECK(memguard_cgroup_dir("", "/sys/fs/cgroup/memory", "/docker/abc", "/docker/abc", out,
				  sizeof(out)));
	CHECK(strcmp(out, "/sys/fs/cgroup/memory") == 0);
	CHECK(memguard_cgroup_dir("/p", "/m", "/docker/abc", "/docker/abc/sub", out, sizeof(out)));
	CHECK(strcmp(out, "/p/m/sub") == 0);
	CHECK(memguard_cgroup_dir("", "/m", "/docker/abc", "/docker/abcd", out, sizeof(out)));
	CHECK(strcmp(out, "/m") == 0);
	CHECK(memguard_cgroup_dir("", "/m", "/", "/../../x", out, sizeof(out)));
	CHECK(strcmp(out, "/m") == 0);
	CHECK(!memguard_cgroup_dir("", "/m", "/", "/a/very/long/path", out, 8));
}

static const char mountinfo_v2[] =
	"25 1 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
static const char mountinfo_hybrid[] =
	"35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";

/* Runs memguard_locate on the fixture and checks what it found; rel_dir is
 * the limiting cgroup's directory below the fixture. */
static void expect_located(const char *cg, size_t cg_len, const char *mi, size_t mi_len,
			   enum memguard_source source, uint64_t limit, const char *rel_dir)
{
	struct memguard_limit lim;
	char want[512];
	snprintf(want, sizeof(want), "%s%s", fixture, rel_dir);
	CHECK(memguard_locate(fixture, cg, cg_len, mi, mi_len, &lim));
	CHECK(lim.source == source);
	CHECK_EQ_U64(lim.limit, limit);
	CHECK(strcmp(lim.dir, want) == 0);
}

static void test_locate_v2_nested(void)
{
	new_fixture();
	put("/sys/fs/cgroup/kubepods/memory.max", "1073741824\n");
	put("/sys/fs/cgroup/kubepods/pod1/memory.max", "201326592\n");
	put("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n");
	static const char cg[] = "0::/kubepods/pod1/ctr\n";
	expect_located(S(cg), S(mountinfo_v2), MEMGUARD_CGROUP_V2, 201326592,
		       "/sys/fs/cgroup/kubepods/pod1");
	/* a tighter limit deeper down wins */
	put("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "104857600\n");
	expect_located(S(cg), S(mountinfo_v2), MEMGUARD_CGROUP_V2, 104857600,
		       "/sys/fs/cgroup/kubepods/pod1/ctr");
	drop_fixture();
}

static void test_locate_v2_namespace(void)
{
	new_fixture();
	put("/sys/fs/cgroup/memory.max", "268435456\n");
	expect_located(S("0::/\n"), S(mountinfo_v2), MEMGUARD_CGROUP_V2, 268435456,
		       "/sys/fs/cgroup");
	drop_fixture();
}

static void test_locate_v1_and_hybrid(void)
{
	new_fixture();
	put("/sys/fs/cgroup/memory/a/memory.limit_in_bytes", "314572800\n");
	put("/sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
	put("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	/* the v2 side of a hybrid host has no memory controller: no memory.max */
	put("/sys/fs/cgroup/unified/a/b/cgroup.procs", "");
	static const char cg[] = "4:memory:/a/b\n0::/a/b\n";
	expect_located(S(cg), S(mountinfo_hybrid), MEMGUARD_CGROUP_V1, 314572800,
		       "/sys/fs/cgroup/memory/a");
	drop_fixture();
}

static void test_locate_none(void)
{
	new_fixture();
	put("/sys/fs/cgroup/x/memory.max", "max\n");
	struct memguard_limit lim;
	CHECK(!memguard_locate(fixture, S("0::/x\n"), S(mountinfo_v2), &lim));
	CHECK(lim.source == MEMGUARD_NONE);
	CHECK(!memguard_locate(fixture, S("0::/x\n"), S("garbage\n"), &lim));
	drop_fixture();
}

static const uint32_t defaults[] = { 800000, 900000, 950000 };

static void test_thresholds_fire_once_per_period(void)
{
	struct memguard_state s;
	struct memguard_trigger t;
	memguard_state_init(&s, defaults, 3, 1000);
	memguard_step(&s, 500, &t);
	CHECK(!t.fired);
	memguard_step(&s, 810, &t);
	CHECK(t.fired && t.threshold_ppm == 800000 && t.usage == 810 && t.limit == 1000);
	memguard_step(&s, 820, &t);
	CHECK(!t.fired);
	/* many crossings in one period: no more exports of 80% */
	for (int i = 0; i < 10; i++) {
		memguard_step(&s, 500, &t);
		CHECK(!t.fired);
		memguard_step(&s, (uint64_t)(830 + i), &t);
		CHECK(!t.fired);
	}
	memguard_step(&s, 920, &t);
	CHECK(t.fired && t.threshold_ppm == 900000);
	/* next period: a new high after a drop counts again, the same level does not */
	memguard_new_period(&s);
	memguard_step(&s, 700, &t);
	CHECK(!t.fired);
	memguard_step(&s, 880, &t);
	CHECK(!t.fired); /* not above 920, the highest usage seen above 80% */
	memguard_step(&s, 700, &t);
	memguard_step(&s, 930, &t);
	CHECK(t.fired && t.threshold_ppm == 900000);
}

static void test_thresholds_hover_and_jump(void)
{
	struct memguard_state s;
	struct memguard_trigger t;
	memguard_state_init(&s, defaults, 3, 1000);
	memguard_step(&s, 960, &t); /* one jump past all three: one export, the highest */
	CHECK(t.fired && t.threshold_ppm == 950000);
	memguard_step(&s, 990, &t);
	CHECK(!t.fired);
	/* hovering around 80% over many periods: nothing new */
	for (int p = 0; p < 5; p++) {
		memguard_new_period(&s);
		memguard_step(&s, 790, &t);
		CHECK(!t.fired);
		memguard_step(&s, 805, &t);
		CHECK(!t.fired);
	}
	/* a re-crossing held back by the rate limit fires in the next period
	 * if it is still a new high */
	memguard_state_init(&s, defaults, 3, 1000);
	memguard_step(&s, 810, &t);
	CHECK(t.fired);
	memguard_step(&s, 500, &t);
	memguard_step(&s, 850, &t);
	CHECK(!t.fired);
	memguard_new_period(&s);
	memguard_step(&s, 860, &t);
	CHECK(t.fired && t.threshold_ppm == 800000);
	/* limits large enough to overflow a naive limit * ppm */
	memguard_state_init(&s, defaults, 3, UINT64_MAX / 2);
	memguard_step(&s, UINT64_MAX / 4, &t);
	CHECK(!t.fired);
	memguard_step(&s, (UINT64_MAX / 2) / 10 * 8 + 1000, &t);
	CHECK(t.fired && t.threshold_ppm == 800000);
}

static void test_prime(void)
{
	struct memguard_state s;
	struct memguard_trigger t;
	memguard_state_init(&s, defaults, 3, 1000);
	memguard_prime(&s, 850); /* started in a cgroup already at 85% */
	memguard_step(&s, 860, &t);
	CHECK(!t.fired);
	memguard_step(&s, 905, &t);
	CHECK(t.fired && t.threshold_ppm == 900000);
	memguard_step(&s, 700, &t);
	memguard_step(&s, 880, &t);
	CHECK(!t.fired); /* 80%: below the 905 seen above it */
	memguard_new_period(&s);
	memguard_step(&s, 700, &t);
	memguard_step(&s, 910, &t);
	CHECK(t.fired && t.threshold_ppm == 900000);
}

static void test_interval(void)
{
	struct memguard_state s;
	memguard_state_init(&s, defaults, 3, 1000 * MIB);
	CHECK_EQ_U64(memguard_interval_ns(&s, 100 * MIB, 100 * MIB, 250000000), 250000000);
	CHECK_EQ_U64(memguard_interval_ns(&s, 730 * MIB, 730 * MIB, 250000000), 100000000);
	CHECK_EQ_U64(memguard_interval_ns(&s, 780 * MIB, 780 * MIB, 250000000), 50000000);
	/* 50 MiB in 250 ms, 300 MiB from 80%: eta 1.5 s, a quarter of it */
	CHECK_EQ_U64(memguard_interval_ns(&s, 500 * MIB, 450 * MIB, 250000000), 250000000);
	uint64_t fast = memguard_interval_ns(&s, 600 * MIB, 450 * MIB, 250000000);
	CHECK(fast < 250000000 && fast >= 10000000);
	CHECK_EQ_U64(memguard_interval_ns(&s, 790 * MIB, 600 * MIB, 250000000), 10000000);
}

static void test_settings(void)
{
	uint32_t t[SW_MEMORY_THRESHOLDS_MAX], n = 0;
	CHECK(config_parse_thresholds("80,90,95", t, SW_MEMORY_THRESHOLDS_MAX, &n) && n == 3 &&
	      t[0] == 800000 && t[2] == 950000);
	CHECK(config_parse_thresholds(" 95 , 70.5,95", t, SW_MEMORY_THRESHOLDS_MAX, &n) && n == 2 &&
	      t[0] == 705000 && t[1] == 950000);
	CHECK(config_parse_thresholds("100", t, SW_MEMORY_THRESHOLDS_MAX, &n) && n == 1);
	CHECK(!config_parse_thresholds("", t, SW_MEMORY_THRESHOLDS_MAX, &n));
	CHECK(!config_parse_thresholds("0", t, SW_MEMORY_THRESHOLDS_MAX, &n));
	CHECK(!config_parse_thresholds("101", t, SW_MEMORY_THRESHOLDS_MAX, &n));
	CHECK(!config_parse_thresholds("80,,90", t, SW_MEMORY_THRESHOLDS_MAX, &n));
	CHECK(!config_parse_thresholds("80%", t, SW_MEMORY_THRESHOLDS_MAX, &n));
	CHECK(!config_parse_thresholds("1,2,3,4,5,6,7,8,9", t, SW_MEMORY_THRESHOLDS_MAX, &n));
	uint64_t b = 0;
	CHECK(config_parse_bytes("512M", &b) && b == 512 * MIB);
	CHECK(config_parse_bytes("2G", &b) && b == 2048 * MIB);
	CHECK(config_parse_bytes("64KiB", &b) && b == 64 * 1024);
	CHECK(config_parse_bytes("3Mi", &b) && b == 3 * MIB);
	CHECK(config_parse_bytes("1048576", &b) && b == MIB);
	CHECK(config_parse_bytes("100B", &b) && b == 100);
	CHECK(!config_parse_bytes("0", &b));
	CHECK(!config_parse_bytes("12X", &b));
	CHECK(!config_parse_bytes("M", &b));
	CHECK(!config_parse_bytes("99999999999T", &b));
	CHECK(!config_parse_bytes("5 M", &b));
}

int main(void)
{
	RUN(test_cgroup_path);
	RUN(test_mount);
	RUN(test_values);
	RUN(test_dir);
	RUN(test_locate_v2_nested);
	RUN(test_locate_v2_namespace);
	RUN(test_locate_v1_and_hybrid);
	RUN(test_locate_none);
	RUN(test_thresholds_fire_once_per_period);
	RUN(test_thresholds_hover_and_jump);
	RUN(test_prime);
	RUN(test_interval);
	RUN(test_settings);
	return CHECK_DONE();
}
