/* Wall sampler stack reuse: threads blocked in raw futex waits made
 * with an inline system call instruction, which no interposed wrapper sees,
 * so the sampler takes their stacks from /proc/self/task/TID/syscall and
 * reuses a stack while the thread's CPU clock stands still.
 *
 *  - reuse-blocked: one wait for the whole run, in blocked_forever().  Its
 *    stack is read once and reused; every sample must still carry the wall
 *    time since the previous one.
 *  - reuse-alt: 3 ms waits in a repeating pattern a, a, a, b: site_a() and
 *    site_b() call the same raw_wait() from frames of the same size, so
 *    the kernel reports the same sp and pc for both; only the return
 *    addresses above tell them apart.  A thread that ran between two
 *    samples must get a fresh stack.
 *  - reuse-phases: one long wait in phase_x() (300 ms), then one in
 *    phase_y() (100 ms), repeated: a stack reused over many samples must be
 *    dropped as soon as the thread moved.
 * Each thread measures the time spent inside each of its waiting
 * functions.  Output after SECONDS:
 *   site THREAD FUNCTION NS_IN_FUNCTION LIFETIME_NS
 * Usage: wall_reuse SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
/* <linux/futex.h> is not in musl's include path. */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

static atomic_int stop;
static int never_word; /* stays 0: every wait lasts its timeout */
static int forever_word;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* FUTEX_WAIT through the system call instruction itself. */
static NOINLINE long raw_futex(int *word, int op, int val, const struct timespec *timeout)
{
	long ret;
#if defined(__x86_64__)
	register long r10 __asm__("r10") = (long)timeout;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_futex), "D"(word), "S"((long)op), "d"((long)val), "r"(r10)
			 : "rcx", "r11", "memory");
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_futex;
	register long x0 __asm__("x0") = (long)word;
	register long x1 __asm__("x1") = op;
	register long x2 __asm__("x2") = val;
	register long x3 __asm__("x3") = (long)timeout;
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	ret = x0;
#else
#error "raw_futex: x86-64 and aarch64 only"
#endif
	return ret;
}

static NOINLINE void raw_wait(long ms)
{
	struct timespec ts = { 0, ms * 1000000l };
	(void)raw_futex(&never_word, FUTEX_WAIT_PRIVATE, 0, &ts);
}

/* Same frame size, same callee: distinct constants keep them apart. */
static volatile long site_a_calls, site_b_calls;
static NOINLINE long long site_a(void)
{
	long long t0 = now_ns();
	raw_wait(3);
	site_a_calls += 1;
	return now_ns() - t0;
}
static NOINLINE long long site_b(void)
{
	long long t0 = now_ns();
	raw_wait(3);
	site_b_calls += 2;
	return now_ns() - t0;
}

static NOINLINE long long phase_x(void)
{
	long long t0 = now_ns();
	raw_wait(300);
	site_a_calls += 3;
	return now_ns() - t0;
}
static NOINLINE long long phase_y(void)
{
	long long t0 = now_ns();
	raw_wait(100);
	site_b_calls += 4;
	return now_ns() - t0;
}

static NOINLINE void blocked_forever(void)
{
	while (!atomic_load(&stop))
		(void)raw_futex(&forever_word, FUTEX_WAIT_PRIVATE, 0, NULL);
}

struct result {
	const char *thread;
	const char *fn[2];
	long long in_fn[2];
	long long lifetime;
};
static struct result results[3] = {
	{ "reuse-blocked", { "blocked_forever", NULL }, { 0, 0 }, 0 },
	{ "reuse-alt", { "site_a", "site_b" }, { 0, 0 }, 0 },
	{ "reuse-phases", { "phase_x", "phase_y" }, { 0, 0 }, 0 },
};

static void *worker(void *p)
{
	struct result *r = p;
	(void)prctl(PR_SET_NAME, r->thread, 0, 0, 0);
	long long t0 = now_ns();
	if (r == &results[0]) {
		blocked_forever();
		r->in_fn[0] = now_ns() - t0;
	} else if (r == &results[1]) {
		for (long i = 0; !atomic_load(&stop); i++) {
			if (i % 4 != 3)
				r->in_fn[0] += site_a();
			else
				r->in_fn[1] += site_b();
		}
	} else {
		for (long i = 0; !atomic_load(&stop); i++) {
			if (i % 2 == 0)
				r->in_fn[0] += phase_x();
			else
				r->in_fn[1] += phase_y();
		}
	}
	r->lifetime = now_ns() - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 4;
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, worker, &results[i]) != 0)
			return 2;
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	while (nanosleep(&ts, &ts) != 0)
		;
	atomic_store(&stop, 1);
	forever_word = 1;
	(void)raw_futex(&forever_word, FUTEX_WAKE_PRIVATE, 1, NULL);
	for (int i = 0; i < 3; i++)
		if (pthread_join(t[i], NULL) != 0)
			return 2;
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < 2 && results[i].fn[k]; k++)
			printf("site %s %s %lld %lld\n", results[i].thread, results[i].fn[k], results[i].in_fn[k],
			       results[i].lifetime);
	return 0;
}
