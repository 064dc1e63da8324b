/* pthread_create interposition: a new thread registers itself (and gets its
 * CPU timer) before the user's start routine runs, so short threads are
 * profiled from their first instruction.  Exported; only in the .so. */
#include "collect/alloc.h"
#include "collect/collect.h"
#include "collect/context.h"
#include "collect/cpu.h"
#include "collect/lock.h"
#include "collect/threads.h"
#include "rt/thread.h"
#include "rt/hooks.h"
#include "rt/sys.h"
#include "symbols/symbols.h"


struct thread_start {
	void *(*fn)(void *);
	void *arg;
};

static void *thread_start_trampoline(void *p)
{
	struct thread_start start = *(struct thread_start *)p;
	rt_free(p);
	int tid = (int)sys_gettid();
	context_thread_started();
	lock_thread_started(alloc_thread_started(tid));
	/* The unwinder reads this thread's stack directly once it knows its
	 * bounds: from the C library, else from /proc/self/maps (whose cost
	 * grows with every thread: a pool of 2000 threads took 1.4 s to start). */
	uint64_t here = (uint64_t)(uintptr_t)&start, lo = 0, hi = 0;
	if (!thread_stack_bounds(here, &lo, &hi) && !symbols_stack_bounds_of(here, &lo, &hi))
		lo = hi = 0;
	int slot = threads_register(tid, true, lo, hi);
	void *result = start.fn(start.arg);
	uint64_t entry = 0;
	__builtin_memcpy(&entry, &start.fn, sizeof(entry));
	cpu_thread_ending(slot, entry, (uintptr_t)__builtin_return_address(0));
	threads_unregister(slot, tid);
	context_thread_exiting();
	return result;
}

/* pthread_t and pthread_attr_t are opaque here: we only pass them through. */
SW_EXPORT int pthread_create(unsigned long *thread, const void *attr, void *(*fn)(void *),
			     void *arg);
SW_EXPORT int pthread_create(unsigned long *thread, const void *attr, void *(*fn)(void *), void *arg)
{
	host_pthread_create_fn next = thread_host_pthread_create();
	if (!next)
		return 11; /* EAGAIN: no pthread_create in this process at all */
	if (!collect_threads_active())
		return next(thread, attr, fn, arg);
	struct thread_start *start = rt_malloc(sizeof(*start));
	if (!start)
		return next(thread, attr, fn, arg);
	start->fn = fn;
	start->arg = arg;
	int r = next(thread, attr, thread_start_trampoline, start);
	if (r != 0)
		rt_free(start);
	return r;
}
