/* Benchmark baseline, not part of the profiler: the least an LD_PRELOAD
 * interposer of pthread_mutex_lock/unlock can cost.  Each entry point jumps
 * through a pointer found once by dlsym(RTLD_NEXT) and does nothing else.
 * bench_lock.sh preloads it to measure the floor that any interposing
 * profiler pays (an extra indirect jump per call, the PLT call into a
 * preloaded object instead of the C library) before doing any work. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*mutex_fn)(pthread_mutex_t *);

static mutex_fn next_lock, next_unlock;

static mutex_fn find(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		fprintf(stderr, "lock_forward: no next %s\n", name);
		abort();
	}
	mutex_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	return f;
}

__attribute__((constructor)) static void lock_forward_init(void)
{
	next_lock = find("pthread_mutex_lock");
	next_unlock = find("pthread_mutex_unlock");
}

__attribute__((visibility("default"))) int pthread_mutex_lock(pthread_mutex_t *m)
{
	return next_lock(m);
}

__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t *m)
{
	return next_unlock(m);
}
