/* The runtime layer, checked against libc and libm as independent judges. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt/rt.h"
#include "unit/check.h"

static void fmt_matches_libc(void)
{
	char ours[128], theirs[128];
	rt_snprintf(ours, sizeof(ours), "%d|%5d|%-5d|%05d|%u|%x|%X|%lu|%lld|%zu|%s|%.*s|%c|%%",
		    -42, 7, 7, -3, 4000000000u, 0xbeefu, 0xbeefu, 123456789012ul, -9000000000000ll,
		    (size_t)17, "str", 2, "abc", 'z');
	snprintf(theirs, sizeof(theirs), "%d|%5d|%-5d|%05d|%u|%x|%X|%lu|%lld|%zu|%s|%.*s|%c|%%",
		 -42, 7, 7, -3, 4000000000u, 0xbeefu, 0xbeefu, 123456789012ul, -9000000000000ll,
		 (size_t)17, "str", 2, "abc", 'z');
	CHECK(strcmp(ours, theirs) == 0);
	rt_snprintf(ours, sizeof(ours), "[%.3s|%.8s|%.0s]", "abcdef", "ab", "x");
	snprintf(theirs, sizeof(theirs), "[%.3s|%.8s|%.0s]", "abcdef", "ab", "x");
	CHECK(strcmp(ours, theirs) == 0);
	rt_snprintf(ours, sizeof(ours), "%p", (void *)0x1234);
	CHECK(strcmp(ours, "0x1234") == 0);
	rt_snprintf(ours, sizeof(ours), "%lld", (long long)INT64_MIN);
	snprintf(theirs, sizeof(theirs), "%lld", (long long)INT64_MIN);
	CHECK(strcmp(ours, theirs) == 0);
}

static void fmt_truncates_and_terminates(void)
{
	char buf[8];
	memset(buf, 'x', sizeof(buf));
	size_t n = rt_snprintf(buf, sizeof(buf), "hello world %d", 12345);
	CHECK(n == strlen("hello world 12345"));
	CHECK(strcmp(buf, "hello w") == 0);
	CHECK(rt_snprintf(buf, 0, "abc") == 3);
}

static void parse_numbers(void)
{
	uint64_t u;
	int64_t i;
	CHECK(rt_parse_u64("18446744073709551615", 20, &u) && u == UINT64_MAX);
	CHECK(!rt_parse_u64("18446744073709551616", 20, &u));
	CHECK(!rt_parse_u64("", 0, &u));
	CHECK(!rt_parse_u64("12a", 3, &u));
	CHECK(rt_parse_i64("-9223372036854775808", 20, &i) && i == INT64_MIN);
	CHECK(!rt_parse_i64("9223372036854775808", 19, &i));
	CHECK(rt_parse_hex_u64("DeadBeef", 8, &u) && u == 0xdeadbeef);
	CHECK(!rt_parse_hex_u64("0x1", 3, &u));
}

static void strings(void)
{
	char d[4];
	CHECK(rt_strlcpy(d, "abcdef", sizeof(d)) == 6 && strcmp(d, "abc") == 0);
	CHECK(rt_eq_nocase("TrUe", 4, "true"));
	CHECK(!rt_eq_nocase("tru", 3, "true"));
	CHECK(rt_starts_with("stowaway", "stow") && !rt_starts_with("st", "stow"));
	char a[100], b[100];
	for (int k = 0; k < 100; k++)
		a[k] = (char)k;
	rt_memmove(a + 10, a, 50);
	memcpy(b, a, 100);
	for (int k = 0; k < 100; k++)
		a[k] = (char)k;
	memmove(a + 10, a, 50);
	CHECK(memcmp(a, b, 100) == 0);
}

/* The word-at-a-time scans against libc: every start alignment, length and
 * needle position, bytes that trip a sloppy zero-byte test (0x01, 0x80,
 * 0xff next to the one looked for), and strings that end at the last byte
 * before an unreadable page. */
static void scans_match_libc(void)
{
	static const unsigned char fill[] = {0x01, 0x80, 0xff, 0x7f, 0x41, 0x00, 0x02, 0x81};
	unsigned char buf[96];
	for (size_t start = 0; start < 16; start++) {
		for (size_t len = 0; len + start < 80; len++) {
			for (size_t f = 0; f < sizeof(fill); f++) {
				memset(buf, 0x55, sizeof(buf));
				for (size_t i = 0; i < len; i++)
					buf[start + i] = fill[(i + f) % sizeof(fill)] == 0 ? 0x30 : fill[(i + f) % sizeof(fill)];
				buf[start + len] = 0;
				const char *str = (const char *)buf + start;
				CHECK_EQ_U64(rt_strlen(str), strlen(str));
				for (size_t max = 0; max < len + 10; max += 3)
					CHECK_EQ_U64(rt_strnlen(str, max), strnlen(str, max));
				const int needles[] = {0, 0x01, 0x80, 0xff, 0x41, 0x30};
				for (size_t k = 0; k < sizeof(needles) / sizeof(needles[0]); k++)
					CHECK(rt_memchr(str, needles[k], len) == memchr(str, needles[k], len));
			}
		}
	}
	long page = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(two != MAP_FAILED);
	if (two == MAP_FAILED)
		return;
	CHECK(mprotect(two + page, (size_t)page, PROT_NONE) == 0);
	memset(two, 'x', (size_t)page);
	for (size_t len = 0; len < 20; len++) {
		char *str = two + page - 1 - len;
		str[len] = 0;
		CHECK_EQ_U64(rt_strlen(str), len);
		CHECK_EQ_U64(rt_strnlen(str, SIZE_MAX), len);
		CHECK(rt_memchr(str, 0, len + 1) == str + len);
		CHECK(rt_memchr(str, 'y', len + 1) == NULL);
		str[len] = 'x';
	}
	munmap(two, (size_t)page * 2);
}

static void math_matches_libm(void)
{
	double xs[] = { 1e-300, 1e-10, 0.001, 0.5, 0.999999, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e200 };
	for (size_t k = 0; k < sizeof(xs) / sizeof(xs[0]); k++) {
		double want = log(xs[k]), got = rt_ln(xs[k]);
		CHECK(fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want)));
	}
	double es[] = { -700, -20, -1, -1e-9, 0, 1e-9, 0.5, 1, 3.3, 50, 700 };
	for (size_t k = 0; k < sizeof(es) / sizeof(es[0]); k++) {
		double want = exp(es[k]), got = rt_exp(es[k]);
		CHECK(fabs(got - want) <= 1e-12 * want);
	}
	/* A sweep over the ranges the samplers use: uniform draws in (0, 1]
	 * for ln, -amount/mean in [-40, 0] for exp. */
	double worst_ln = 0, worst_exp = 0;
	for (int k = 1; k <= 100000; k++) {
		double u = (double)k / 100000.0;
		worst_ln = fmax(worst_ln, fabs(rt_ln(u) - log(u)) / fmax(1e-300, fabs(log(u))));
		double x = -40.0 * u;
		worst_exp = fmax(worst_exp, fabs(rt_exp(x) - exp(x)) / exp(x));
	}
	CHECK(worst_ln <= 1e-14);
	CHECK(worst_exp <= 1e-14);
}

static void exponential_has_the_right_mean(void)
{
	struct rt_rng r;
	rt_rng_seed(&r);
	double sum = 0;
	const int n = 200000;
	for (int k = 0; k < n; k++)
		sum += rt_rng_exponential(&r, 512.0 * 1024);
	double mean = sum / n;
	CHECK(fabs(mean / (512.0 * 1024) - 1.0) < 0.02);
}

static void heap_roundtrip(void)
{
	void *ptrs[512];
	size_t sizes[512];
	for (int k = 0; k < 512; k++) {
		sizes[k] = (size_t)(k * 97 % 70000) + 1;
		ptrs[k] = rt_malloc(sizes[k]);
		CHECK(ptrs[k] != NULL);
		CHECK(((uintptr_t)ptrs[k] & 15) == 0);
		memset(ptrs[k], k & 0xff, sizes[k]);
	}
	for (int k = 0; k < 512; k++) {
		unsigned char *p = ptrs[k];
		CHECK(p[0] == (k & 0xff) && p[sizes[k] - 1] == (k & 0xff));
		p = rt_realloc(p, sizes[k] * 2);
		CHECK(p && p[sizes[k] - 1] == (k & 0xff));
		rt_free(p);
	}
	unsigned char *z = rt_calloc(1000, 3);
	int nonzero = 0;
	for (int k = 0; k < 3000; k++)
		nonzero += z[k] != 0;
	CHECK(nonzero == 0);
	rt_free(z);
	CHECK(rt_calloc(SIZE_MAX / 2, 4) == NULL);
	size_t before = rt_heap_mapped_bytes();
	void *big = rt_malloc(10 << 20);
	CHECK(rt_heap_mapped_bytes() >= before + (10 << 20));
	rt_free(big);
	CHECK(rt_heap_mapped_bytes() == before);
}

/* Large blocks freed inside a keep scope come back for the next large
 * allocation of about their size (calloc'd ones zeroed), nested scopes
 * keep them until the outer end, and nothing stays mapped after it. */
static void heap_keep_reuses_large_blocks(void)
{
	size_t before = rt_heap_mapped_bytes();
	rt_heap_keep_begin();
	unsigned char *a = rt_malloc(300 << 10);
	CHECK(a != NULL);
	memset(a, 0xab, 300 << 10);
	rt_free(a);
	CHECK(rt_heap_mapped_bytes() > before); /* kept */
	unsigned char *b = rt_malloc(200 << 10); /* at least half of it: reused */
	CHECK(b == a);
	rt_free(b);
	unsigned char *c = rt_calloc(250, 1 << 10);
	CHECK(c == a);
	int nonzero = 0;
	for (size_t k = 0; c != NULL && k < (250 << 10); k++)
		nonzero += c[k] != 0;
	CHECK(nonzero == 0);
	rt_free(c);
	unsigned char *d = rt_malloc(100 << 10); /* under half: fresh pages */
	CHECK(d != NULL && d != a);
	rt_free(d);
	unsigned char *e = rt_malloc(600 << 10); /* bigger than any kept: fresh */
	CHECK(e != NULL && e != a);
	rt_heap_keep_begin();
	rt_free(e);
	rt_heap_keep_end(); /* inner end: still kept */
	CHECK(rt_malloc(500 << 10) == e);
	rt_free(e);
	void *huge = rt_malloc(2 << 20); /* more than the keep holds: unmapped */
	rt_free(huge);
	rt_heap_keep_end();
	CHECK(rt_heap_mapped_bytes() == before);
	void *f = rt_malloc(300 << 10); /* no scope: nothing kept */
	rt_free(f);
	CHECK(rt_heap_mapped_bytes() == before);
}

static void buf_grows(void)
{
	struct rt_buf b = { 0 };
	for (int k = 0; k < 10000; k++)
		rt_buf_appendf(&b, "%d,", k);
	CHECK(!b.failed);
	CHECK(b.len > 40000);
	CHECK(memcmp(b.data, "0,1,2,", 6) == 0);
	rt_buf_free(&b);
}

static struct rt_mutex counter_lock = RT_MUTEX_INIT;
static long counter;

static void *bump(void *arg)
{
	(void)arg;
	for (int k = 0; k < 200000; k++) {
		rt_mutex_lock(&counter_lock);
		counter++;
		rt_mutex_unlock(&counter_lock);
		if (k % 1000 == 0) {
			void *p = rt_malloc((size_t)k % 5000 + 1);
			rt_free(p);
		}
	}
	return NULL;
}

static void mutex_excludes(void)
{
	pthread_t t[4];
	for (int k = 0; k < 4; k++)
		pthread_create(&t[k], NULL, bump, NULL);
	for (int k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	CHECK(counter == 800000);
}

static void clocks_advance(void)
{
	uint64_t a = rt_monotonic_ns();
	CHECK(rt_sleep_ns(2000000));
	uint64_t b = rt_monotonic_ns();
	CHECK(b - a >= 2000000);
	CHECK(rt_realtime_ns() > 1600000000ull * 1000000000ull);
	volatile double x = 0;
	uint64_t c0 = rt_thread_cpu_ns();
	for (int k = 0; k < 1000000; k++)
		x += k;
	CHECK(rt_thread_cpu_ns() > c0);
}

/* A child's CPU counts once it has been waited for. */
static void children_cpu_counts_waited_children(void)
{
	uint64_t before = rt_children_cpu_ns();
	pid_t pid = fork();
	if (pid == 0) {
		uint64_t start = rt_thread_cpu_ns();
		volatile double x = 0;
		while (rt_thread_cpu_ns() - start < 30000000u)
			x += 1;
		_exit(0);
	}
	CHECK(pid > 0);
	int status = 0;
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	uint64_t after = rt_children_cpu_ns();
	printf("  a child's 30 ms of CPU: %llu us counted\n", (unsigned long long)((after - before) / 1000));
	CHECK(after >= before + 25000000u);
}

static void env_lookup(void)
{
	setenv("STOWAWAY_TEST_VAR", "hello", 1);
	const char *v = rt_getenv("STOWAWAY_TEST_VAR");
	CHECK(v && strcmp(v, "hello") == 0);
	CHECK(rt_getenv("STOWAWAY_TEST_VA") == NULL);
}

/* The fields rt_statx's fstatat fallback fills, as libc's statx gave them. */
static bool statx_same(const struct statx *a, const struct statx *b)
{
	return a->stx_ino == b->stx_ino && a->stx_size == b->stx_size && a->stx_mode == b->stx_mode &&
	       a->stx_nlink == b->stx_nlink && a->stx_uid == b->stx_uid && a->stx_gid == b->stx_gid &&
	       a->stx_dev_major == b->stx_dev_major && a->stx_dev_minor == b->stx_dev_minor &&
	       a->stx_rdev_major == b->stx_rdev_major && a->stx_rdev_minor == b->stx_rdev_minor &&
	       a->stx_mtime.tv_sec == b->stx_mtime.tv_sec &&
	       a->stx_mtime.tv_nsec == b->stx_mtime.tv_nsec && a->stx_blocks == b->stx_blocks;
}

/* With statx refused by a seccomp filter (ENOSYS, as a kernel before 4.11;
 * EPERM, as a container's filter without it), rt_statx answers through
 * fstatat what libc's statx answered before the filter: by path, by
 * descriptor (AT_EMPTY_PATH), for a regular file, a directory and a device. */
static void statx_refused_falls_back(void)
{
	const char *paths[] = {"/proc/self/exe", "/etc/passwd", "/tmp", "/dev/null"};
	enum { N = sizeof(paths) / sizeof(paths[0]) };
	const unsigned mask = STATX_BASIC_STATS;
	for (int e = 0; e < 2; e++) {
		int err = e == 0 ? ENOSYS : EPERM;
		int fd = open("/etc/passwd", O_RDONLY);
		struct statx want[N + 1];
		memset(want, 0, sizeof(want));
		CHECK(fd >= 0);
		for (int i = 0; i < N; i++)
			CHECK(statx(AT_FDCWD, paths[i], 0, mask, &want[i]) == 0);
		CHECK(statx(fd, "", AT_EMPTY_PATH, mask, &want[N]) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			struct sock_filter f[] = {
				BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
				BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_statx, 0, 1),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
				BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			};
			struct sock_fprog prog = {4, f};
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
			    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
				_exit(3);
			struct statx got;
			if (syscall(SYS_statx, AT_FDCWD, "/tmp", 0, mask, &got) != -1 || errno != err)
				_exit(4); /* the filter is not what this test means */
			for (int i = 0; i < N; i++) {
				memset(&got, 0xa5, sizeof(got));
				if (rt_statx(AT_FDCWD, paths[i], 0, mask, &got) != 0 || !statx_same(&got, &want[i]) ||
				    (got.stx_mask & mask) != mask)
					_exit(10 + i);
			}
			memset(&got, 0xa5, sizeof(got));
			if (rt_statx(fd, "", AT_EMPTY_PATH, mask, &got) != 0 || !statx_same(&got, &want[N]))
				_exit(10 + N);
			if (rt_statx(AT_FDCWD, "/nonexistent/stowaway", 0, mask, &got) != -ENOENT)
				_exit(20);
			_exit(0);
		}
		int status = -1;
		CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
		printf("  statx refused with %s: child exit %d (0: every field as statx gave it)\n",
		       err == ENOSYS ? "ENOSYS" : "EPERM", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		close(fd);
	}
}

int main(void)
{
	RUN(fmt_matches_libc);
	RUN(fmt_truncates_and_terminates);
	RUN(parse_numbers);
	RUN(strings);
	RUN(scans_match_libc);
	RUN(math_matches_libm);
	RUN(exponential_has_the_right_mean);
	RUN(heap_roundtrip);
	RUN(heap_keep_reuses_large_blocks);
	RUN(buf_grows);
	RUN(mutex_excludes);
	RUN(clocks_advance);
	RUN(children_cpu_counts_waited_children);
	RUN(env_lookup);
	RUN(statx_refused_falls_back);
	return CHECK_DONE();
}
