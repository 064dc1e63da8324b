/* Running a function on every thread of ours (rt/thread.c thread_own_run):
 * threads asleep in thread_own_sleep_until or on their own futex word wake
 * at once and run it; failures are counted; a busy thread is reported late
 * after the timeout and still runs the request when it next waits; a thread
 * that ended is not waited for.  A stop wakes a thread of ours at once
 * (thread_own_interrupt) and waits for its alive flag, not its next tick;
 * a request posted while a thread spawned without waiting is still
 * starting reaches it. */
#define _GNU_SOURCE
#include "check.h"
#include "rt/rt.h"
#include "rt/thread.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int gettid_now(void) { return (int)syscall(SYS_gettid); }

#define LONG_SLEEP_NS (10ull * 1000 * 1000 * 1000)

static atomic_int stop;
static atomic_int ran_tids[8];
static atomic_int ran;
static atomic_int started;

static long record_tid(const void *arg)
{
	long add = *(const long *)arg;
	int i = atomic_fetch_add(&ran, 1);
	if (i < 8)
		atomic_store(&ran_tids[i], gettid_now() + (int)add);
	return 0;
}

static long refuse(const void *arg)
{
	(void)arg;
	atomic_fetch_add(&ran, 1);
	return -EPERM;
}

static void *sleeper(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop))
		thread_own_sleep_until(rt_monotonic_ns() + LONG_SLEEP_NS / 10);
	return NULL;
}

static atomic_int own_word;

static void *word_waiter(void *arg)
{
	(void)arg;
	thread_own_wake_word(&own_word);
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&stop)) {
		int seen = atomic_load(&own_word);
		thread_own_service();
		struct timespec ts = { 1, 0 };
		(void)syscall(SYS_futex, &own_word, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, &ts, NULL, 0);
	}
	return NULL;
}

static atomic_int busy_release;

static void *busy(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load(&busy_release))
		sched_yield();
	while (!atomic_load(&stop))
		thread_own_sleep_until(rt_monotonic_ns() + LONG_SLEEP_NS / 10);
	return NULL;
}

static void wait_started(int n)
{
	for (int i = 0; i < 5000 && atomic_load(&started) < n; i++)
		usleep(1000);
	CHECK(atomic_load(&started) >= n);
}

static void wait_ran(int n)
{
	for (int i = 0; i < 5000 && atomic_load(&ran) < n; i++)
		usleep(1000);
}

static void nothing_to_ask_before_any_thread(void)
{
	long zero = 0;
	struct thread_own_outcome o = thread_own_run(record_tid, &zero, sizeof(zero), 1000000);
	CHECK_EQ_U64(o.threads, 0);
	CHECK_EQ_U64(atomic_load(&ran), 0);
}

static void sleeping_threads_run_it_at_once(void)
{
	CHECK(thread_spawn(sleeper, NULL) == 0);
	CHECK(thread_spawn(word_waiter, NULL) == 0);
	wait_started(2);
	usleep(20000); /* both asleep for 1 s now */
	atomic_store(&ran, 0);
	long zero = 0;
	uint64_t t0 = rt_monotonic_ns();
	struct thread_own_outcome o = thread_own_run(record_tid, &zero, sizeof(zero), LONG_SLEEP_NS);
	uint64_t took = rt_monotonic_ns() - t0;
	CHECK_EQ_U64(o.threads, 2);
	CHECK_EQ_U64(o.late, 0);
	CHECK_EQ_U64(o.failed, 0);
	CHECK_EQ_U64(atomic_load(&ran), 2);
	/* Woken, not waited out: their sleeps last 1 s. */
	CHECK(took < 500ull * 1000 * 1000);
	int me = gettid_now();
	for (int i = 0; i < 2; i++) {
		int tid = atomic_load(&ran_tids[i]);
		CHECK(tid != me && thread_is_own(tid));
	}
	CHECK(atomic_load(&ran_tids[0]) != atomic_load(&ran_tids[1]));
}

/* A thread of ours that sleeps in long rounds until told to stop, then
 * clears its alive flag as it ends. */
struct sleeper_loop {
	atomic_int stop, alive, tid;
};

static void *sleep_until_stopped(void *arg)
{
	struct sleeper_loop *l = arg;
	atomic_store(&l->tid, gettid_now());
	while (!atomic_load(&l->stop))
		thread_own_sleep_until(rt_monotonic_ns() + LONG_SLEEP_NS);
	thread_flag_clear(&l->alive);
	return NULL;
}

static struct sleeper_loop starter, ticker;

/* A thread spawned without waiting and a request posted at once: the
 * request waits for the thread to mark itself, and the thread runs it. */
static void unwaited_thread_takes_a_request_posted_at_once(void)
{
	atomic_store(&starter.alive, 1);
	CHECK_EQ_U64(thread_spawn_unwaited(sleep_until_stopped, &starter), 0);
	atomic_store(&ran, 0);
	long zero = 0;
	struct thread_own_outcome o = thread_own_run(record_tid, &zero, sizeof(zero), LONG_SLEEP_NS);
	CHECK_EQ_U64(o.threads, 3); /* with sleeper and word_waiter */
	CHECK_EQ_U64(o.late, 0);
	CHECK_EQ_U64(atomic_load(&ran), 3);
	int tid = atomic_load(&starter.tid);
	bool found = false;
	for (int i = 0; i < 3; i++)
		found |= atomic_load(&ran_tids[i]) == tid;
	CHECK(tid != 0 && found);
	atomic_store(&starter.stop, 1);
	thread_own_interrupt();
	CHECK(thread_flag_wait_clear(&starter.alive, LONG_SLEEP_NS));
}

static void failures_are_counted(void)
{
	atomic_store(&ran, 0);
	struct thread_own_outcome o = thread_own_run(refuse, NULL, 0, LONG_SLEEP_NS);
	CHECK_EQ_U64(o.threads, 2);
	CHECK_EQ_U64(o.failed, 2);
	CHECK(o.error == -EPERM);
	CHECK_EQ_U64(atomic_load(&ran), 2);
}

static void busy_thread_is_late_then_runs_it(void)
{
	CHECK(thread_spawn(busy, NULL) == 0);
	wait_started(3);
	atomic_store(&ran, 0);
	long one = 1;
	struct thread_own_outcome o = thread_own_run(record_tid, &one, sizeof(one), 300ull * 1000 * 1000);
	CHECK_EQ_U64(o.late, 1);
	CHECK_EQ_U64(o.threads, 3);
	CHECK_EQ_U64(atomic_load(&ran), 2);
	atomic_store(&busy_release, 1);
	wait_ran(3);
	CHECK_EQ_U64(atomic_load(&ran), 3);
}

static void interrupted_thread_stops_at_once(void)
{
	atomic_store(&ticker.alive, 1);
	CHECK_EQ_U64(thread_spawn(sleep_until_stopped, &ticker), 0);
	usleep(20000); /* asleep for 10 s by now */
	uint64_t t0 = rt_monotonic_ns();
	CHECK(!thread_flag_wait_clear(&ticker.alive, 20ull * 1000 * 1000)); /* times out */
	CHECK(rt_monotonic_ns() - t0 >= 20ull * 1000 * 1000);
	atomic_store(&ticker.stop, 1);
	t0 = rt_monotonic_ns();
	thread_own_interrupt();
	CHECK(thread_flag_wait_clear(&ticker.alive, LONG_SLEEP_NS));
	CHECK(rt_monotonic_ns() - t0 < 500ull * 1000 * 1000);
}

static void ended_threads_are_not_waited_for(void)
{
	atomic_store(&stop, 1);
	for (int i = 0; i < 5000; i++) {
		struct thread_own_outcome o = thread_own_run(refuse, NULL, 0, 1000000);
		if (o.threads == 0)
			break;
		usleep(1000);
	}
	uint64_t t0 = rt_monotonic_ns();
	struct thread_own_outcome o = thread_own_run(refuse, NULL, 0, LONG_SLEEP_NS);
	CHECK_EQ_U64(o.threads, 0);
	CHECK(rt_monotonic_ns() - t0 < 500ull * 1000 * 1000);
}

/* thread_stack_bounds against the kernel's own view: the mapping of
 * /proc/self/maps holding the thread's stack (glibc gives exactly it;
 * musl the part below its TLS area), for default, sized and user-provided
 * stacks. */
struct stack_probe {
	int ok;
	uint64_t lo, hi, sp, map_lo, map_hi;
};

static void maps_range_of(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	*lo = *hi = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && addr >= a && addr < b) {
			*lo = a;
			*hi = b;
		}
	}
	if (f)
		fclose(f);
}

static void *probe_stack(void *arg)
{
	struct stack_probe *p = arg;
	volatile char here = 0;
	p->sp = (uint64_t)(uintptr_t)&here;
	p->ok = thread_stack_bounds(p->sp, &p->lo, &p->hi);
	maps_range_of(p->sp, &p->map_lo, &p->map_hi);
	return NULL;
}

static void check_probe(const struct stack_probe *p, bool exact)
{
	CHECK(p->ok);
	CHECK(p->lo <= p->sp && p->sp < p->hi);
	CHECK(p->map_lo <= p->lo && p->hi <= p->map_hi);
	if (exact)
		CHECK(p->lo == p->map_lo);
}

static void stack_bounds_of_created_threads_lie_in_their_mapping(void)
{
	struct stack_probe p = {0};
	pthread_t t;
	CHECK((pthread_create(&t, NULL, probe_stack, &p)) == 0);
	pthread_join(t, NULL);
	check_probe(&p, true);

	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	rt_memset(&p, 0, sizeof(p));
	CHECK((pthread_create(&t, &a, probe_stack, &p)) == 0);
	pthread_join(t, NULL);
	check_probe(&p, true);
	CHECK(p.hi - p.lo >= 64 * 1024 && p.hi - p.lo < 1024 * 1024);

	/* A stack the program provides: inside a larger heap mapping. */
	size_t size = 256 * 1024;
	void *mem = NULL;
	CHECK((posix_memalign(&mem, 4096, size)) == 0);
	pthread_attr_setstack(&a, mem, size);
	rt_memset(&p, 0, sizeof(p));
	CHECK((pthread_create(&t, &a, probe_stack, &p)) == 0);
	pthread_join(t, NULL);
	check_probe(&p, false);
	CHECK(p.lo == (uint64_t)(uintptr_t)mem && p.hi == (uint64_t)(uintptr_t)mem + size);
	pthread_attr_destroy(&a);
	free(mem);
}

int main(void)
{
	RUN(stack_bounds_of_created_threads_lie_in_their_mapping);
	RUN(nothing_to_ask_before_any_thread);
	RUN(sleeping_threads_run_it_at_once);
	RUN(unwaited_thread_takes_a_request_posted_at_once);
	RUN(failures_are_counted);
	RUN(busy_thread_is_late_then_runs_it);
	RUN(interrupted_thread_stops_at_once);
	RUN(ended_threads_are_not_waited_for);
	return CHECK_DONE();
}
