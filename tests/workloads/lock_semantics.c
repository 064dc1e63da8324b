/* Locking semantics that the lock hooks must leave untouched: run with and
 * without the library (and with every contended acquisition sampled); each
 * check prints PASS or FAIL.  glibc and musl. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failed;

static void check(const char *name, int ok, int got)
{
	printf("%s %s", ok ? "PASS" : "FAIL", name);
	if (!ok)
		printf(" (got %d: %s)", got, strerror(got));
	printf("\n");
	if (!ok)
		failed++;
}

static struct timespec deadline(clockid_t clk, long ms)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	ts.tv_nsec += (ms % 1000) * 1000000;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void mutex_of_type(pthread_mutex_t *m, int type, int robust)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, type);
	if (robust)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

static void errorcheck(void)
{
	pthread_mutex_t m;
	mutex_of_type(&m, PTHREAD_MUTEX_ERRORCHECK, 0);
	int r = pthread_mutex_lock(&m);
	check("errorcheck_lock", r == 0, r);
	r = pthread_mutex_lock(&m);
	check("errorcheck_relock_edeadlk", r == EDEADLK, r);
	r = pthread_mutex_unlock(&m);
	check("errorcheck_unlock", r == 0, r);
	r = pthread_mutex_unlock(&m);
	check("errorcheck_unlock_unowned_eperm", r == EPERM, r);
	pthread_mutex_destroy(&m);
}

static void recursive(void)
{
	pthread_mutex_t m;
	mutex_of_type(&m, PTHREAD_MUTEX_RECURSIVE, 0);
	int ok = 1, r = 0;
	for (int i = 0; i < 3 && ok; i++)
		ok = (r = pthread_mutex_lock(&m)) == 0;
	for (int i = 0; i < 3 && ok; i++)
		ok = (r = pthread_mutex_unlock(&m)) == 0;
	check("recursive_lock_unlock_3", ok, r);
	r = pthread_mutex_unlock(&m);
	check("recursive_extra_unlock_eperm", r == EPERM, r);
	pthread_mutex_destroy(&m);
}

static void *lock_and_exit(void *arg)
{
	pthread_mutex_lock(arg);
	return NULL;
}

static void robust(void)
{
	pthread_mutex_t m;
	mutex_of_type(&m, PTHREAD_MUTEX_NORMAL, 1);
	pthread_t t;
	pthread_create(&t, NULL, lock_and_exit, &m);
	pthread_join(t, NULL);
	int r = pthread_mutex_lock(&m);
	check("robust_owner_dead_eownerdead", r == EOWNERDEAD, r);
	/* Not made consistent: the mutex becomes unusable. */
	pthread_mutex_unlock(&m);
	r = pthread_mutex_lock(&m);
	check("robust_not_recoverable", r == ENOTRECOVERABLE, r);
	pthread_mutex_destroy(&m);

	mutex_of_type(&m, PTHREAD_MUTEX_NORMAL, 1);
	pthread_create(&t, NULL, lock_and_exit, &m);
	pthread_join(t, NULL);
	r = pthread_mutex_timedlock(&m, &(struct timespec){ 0, 0 });
	check("robust_timedlock_eownerdead", r == EOWNERDEAD, r);
	r = pthread_mutex_consistent(&m);
	check("robust_consistent", r == 0, r);
	r = pthread_mutex_unlock(&m);
	check("robust_unlock_after_consistent", r == 0, r);
	r = pthread_mutex_lock(&m);
	check("robust_usable_again", r == 0, r);
	pthread_mutex_unlock(&m);
	pthread_mutex_destroy(&m);
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t release_gate = PTHREAD_MUTEX_INITIALIZER;

static void *hold_until_gate(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	pthread_mutex_lock(&release_gate);
	pthread_mutex_unlock(&release_gate);
	pthread_mutex_unlock(&held);
	return NULL;
}

static void timeouts(void)
{
	pthread_mutex_lock(&release_gate);
	pthread_t t;
	pthread_create(&t, NULL, hold_until_gate, NULL);
	while (pthread_mutex_trylock(&held) == 0) /* wait until the thread holds it */
		pthread_mutex_unlock(&held);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct timespec dl = deadline(CLOCK_REALTIME, 50);
	int r = pthread_mutex_timedlock(&held, &dl);
	double ms = ms_since(&t0);
	check("timedlock_etimedout", r == ETIMEDOUT, r);
	check("timedlock_waited_for_the_timeout", ms >= 40 && ms < 5000, (int)ms);
	r = pthread_mutex_timedlock(&held, &(struct timespec){ 0, 2000000000L });
	check("timedlock_bad_nsec_einval", r == EINVAL, r);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 30)
	clock_gettime(CLOCK_MONOTONIC, &t0);
	dl = deadline(CLOCK_MONOTONIC, 50);
	r = pthread_mutex_clocklock(&held, CLOCK_MONOTONIC, &dl);
	ms = ms_since(&t0);
	check("clocklock_etimedout", r == ETIMEDOUT && ms >= 40, r);
#endif
	r = pthread_mutex_trylock(&held);
	check("trylock_held_ebusy", r == EBUSY, r);
	pthread_mutex_unlock(&release_gate);
	pthread_join(t, NULL);
	dl = deadline(CLOCK_REALTIME, 1000);
	r = pthread_mutex_timedlock(&held, &dl);
	check("timedlock_free_mutex", r == 0, r);
	pthread_mutex_unlock(&held);
}

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void *read_twice(void *arg)
{
	int *r = arg;
	*r = pthread_rwlock_rdlock(&rw);
	if (*r == 0)
		*r = pthread_rwlock_unlock(&rw);
	return NULL;
}

static void rwlocks(void)
{
	int r = pthread_rwlock_rdlock(&rw);
	check("rwlock_rdlock", r == 0, r);
	int other = -1;
	pthread_t t;
	pthread_create(&t, NULL, read_twice, &other);
	pthread_join(t, NULL);
	check("rwlock_second_reader", other == 0, other);
	struct timespec dl = deadline(CLOCK_REALTIME, 30);
	int w = -1;
	/* A writer (another thread's view) times out while we read. */
	r = pthread_rwlock_trywrlock(&rw);
	check("rwlock_trywrlock_ebusy", r == EBUSY, r);
	r = pthread_rwlock_unlock(&rw);
	check("rwlock_unlock_reader", r == 0, r);
	r = pthread_rwlock_wrlock(&rw);
	check("rwlock_wrlock", r == 0, r);
	r = pthread_rwlock_tryrdlock(&rw);
	check("rwlock_tryrdlock_ebusy", r == EBUSY, r);
	pthread_create(&t, NULL, read_twice, &other);
	w = pthread_rwlock_timedwrlock(&rw, &dl);
	check("rwlock_timedwrlock_self_edeadlk_or_timeout", w == EDEADLK || w == ETIMEDOUT, w);
	r = pthread_rwlock_unlock(&rw);
	check("rwlock_unlock_writer", r == 0, r);
	pthread_join(t, NULL);
	check("rwlock_reader_after_writer", other == 0, other);
}

#define WORKERS 4
#define ROUNDS 200000
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t counter_rw = PTHREAD_RWLOCK_INITIALIZER;
static long counter, counter2;

static void *increment(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&counter_lock);
		counter++;
		pthread_mutex_unlock(&counter_lock);
		pthread_rwlock_wrlock(&counter_rw);
		counter2++;
		pthread_rwlock_unlock(&counter_rw);
	}
	return NULL;
}

static void exclusion(void)
{
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, increment, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	check("mutex_mutual_exclusion", counter == (long)WORKERS * ROUNDS, (int)counter);
	check("rwlock_mutual_exclusion", counter2 == (long)WORKERS * ROUNDS, (int)counter2);
}

int main(void)
{
	errorcheck();
	recursive();
	robust();
	timeouts();
	rwlocks();
	exclusion();
	return failed ? 1 : 0;
}
