/* Wall sampler cost driver: N host threads that are all waiting, a mix of
 * the cases the sampler meets (a quarter each):
 *  - pthread_cond_wait forever (interposed: published frame, cached stack),
 *  - pthread_mutex_lock on a mutex held forever (not interposed: futex
 *    through /proc/self/task/TID/syscall, then the CPU-clock shortcut),
 *  - nanosleep loops of 5 ms (interposed, the frame changes each call),
 *  - a raw futex wait through syscall(2) with a 5 ms timeout (not
 *    interposed, wakes and moves).
 * After SECONDS it prints the CPU time of our sampler thread, which serves
 * the wall ticks ("stowaway-sample", from /proc/self/task/TID/schedstat;
 * with a thread "stowaway-wall" of an older build that has one, the sum):
 *   wall_sampler_ns NS elapsed_ns NS threads N
 * Usage: wall_threads N SECONDS [KIND]   (KIND 0-3: all threads of that kind) */
#define _GNU_SOURCE
#include <dirent.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int futex_word;

static long only_kind = -1;

static void *waiter(void *p)
{
	long kind = only_kind >= 0 ? only_kind : (long)p % 4;
	if (kind == 0) {
		pthread_mutex_lock(&cond_mutex);
		while (!atomic_load(&stop))
			pthread_cond_wait(&cond, &cond_mutex);
		pthread_mutex_unlock(&cond_mutex);
	} else if (kind == 1) {
		pthread_mutex_lock(&held);
		pthread_mutex_unlock(&held);
	} else if (kind == 2) {
		struct timespec ts = { 0, 5000000 };
		while (!atomic_load(&stop))
			nanosleep(&ts, NULL);
	} else {
		struct timespec ts = { 0, 5000000 };
		while (!atomic_load(&stop))
			syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
	}
	return NULL;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* CPU time of our threads named stowaway-sample or stowaway-wall, -1 if
 * there is none. */
static long long sampler_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	long long result = -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "stowaway-wall", 13) != 0 && strncmp(comm, "stowaway-sample", 15) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", e->d_name);
		f = fopen(path, "r");
		long long ns;
		if (f) {
			if (fscanf(f, "%lld", &ns) == 1)
				result = (result < 0 ? 0 : result) + ns;
			fclose(f);
		}
	}
	closedir(d);
	return result;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	double seconds = argc > 2 ? atof(argv[2]) : 5;
	if (argc > 3)
		only_kind = atol(argv[3]) % 4;
	pthread_mutex_lock(&held);
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, waiter, (void *)i) != 0)
			return 2;
	/* Let the threads settle and the registry find them, then measure. */
	struct timespec settle = { 1, 500000000 };
	nanosleep(&settle, NULL);
	long long cpu0 = sampler_cpu_ns(), t0 = now_ns();
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	long long cpu1 = sampler_cpu_ns(), t1 = now_ns();
	printf("wall_sampler_ns %lld elapsed_ns %lld threads %ld\n", cpu0 < 0 ? -1 : cpu1 - cpu0, t1 - t0, n);
	fflush(stdout);
	atomic_store(&stop, 1);
	pthread_mutex_lock(&cond_mutex);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&cond_mutex);
	pthread_mutex_unlock(&held);
	for (long i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
