/* Creating our own threads without layout-dependent libc calls. */
#include "rt/thread.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/rt.h"
#include "rt/sys.h"

#define OWN_THREADS_MAX 8

static atomic_int own_tids[OWN_THREADS_MAX];

host_pthread_create_fn thread_host_pthread_create(void)
{
	static _Atomic(host_pthread_create_fn) cached;
	host_pthread_create_fn fn = atomic_load(&cached);
	if (fn || !dlsym)
		return fn;
	void *sym = hook_next("pthread_create");
	if (!sym)
		sym = host_dlsym(HOST_RTLD_DEFAULT, "pthread_create");
	HOOK_FN(fn, sym);
	atomic_store(&cached, fn);
	return fn;
}

#define FIRST_LIBC_INTERNAL_SIGNAL 32
#define MUSL_SIGRTMIN 35

/* Every signal except the libc-internal ones, 32 up to SIGRTMIN-1 (glibc:
 * 32 cancel, 33 setxid; musl: 32 timer, 33 cancel, 34 synccall).  setuid,
 * setgid, setgroups and friends make libc signal EVERY thread so that all
 * of them change credentials (POSIX requires it) and wait until each has:
 * a thread of ours blocking that signal would hang the program's setuid
 * forever (and, were it skipped, keep root privileges the program dropped).
 * SIGRTMIN itself is the program's, so it stays blocked. */
static uint64_t host_signals_mask(void)
{
	int rtmin = MUSL_SIGRTMIN; /* covers both libcs if the lookup fails */
	if (dlsym) {
		void *sym = host_dlsym(HOST_RTLD_DEFAULT, "__libc_current_sigrtmin");
		int (*current_sigrtmin)(void) = NULL;
		__builtin_memcpy(&current_sigrtmin, &sym, sizeof(current_sigrtmin));
		if (current_sigrtmin) {
			int r = current_sigrtmin();
			if (r > FIRST_LIBC_INTERNAL_SIGNAL && r <= MUSL_SIGRTMIN)
				rtmin = r;
		}
	}
	uint64_t mask = ~0ull;
	for (int sig = FIRST_LIBC_INTERNAL_SIGNAL; sig < rtmin; sig++)
		mask &= ~(1ull << (sig - 1));
	return mask;
}

/* Shared by the spawner and the new thread; the last one to let go frees it,
 * so neither waits unboundedly for the other. */
struct spawn_request {
	void *(*fn)(void *);
	void *arg;
	atomic_int started;
	atomic_int refs;
};

static void spawn_request_put(struct spawn_request *req)
{
	if (atomic_fetch_sub(&req->refs, 1) == 1)
		rt_free(req);
}

static void *spawn_trampoline(void *p)
{
	struct spawn_request *req = p;
	void *(*fn)(void *) = req->fn;
	void *arg = req->arg;
	/* Marked before the spawner returns: no collector ever profiles us. */
	thread_mark_own((int)sys_gettid());
	atomic_store(&req->started, 1);
	(void)sys_futex((volatile int *)&req->started, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL);
	spawn_request_put(req);
	return fn(arg);
}

int thread_spawn(void *(*fn)(void *), void *arg)
{
	host_pthread_create_fn create = thread_host_pthread_create();
	if (!create)
		return -ENOSYS;
	struct spawn_request *req = rt_calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->fn = fn;
	req->arg = arg;
	atomic_store(&req->refs, 2);
	uint64_t all = host_signals_mask(), old = 0;
	if (sys_rt_sigprocmask(SIG_SETMASK, &all, &old) != 0) {
		rt_free(req);
		return -EINVAL;
	}
	unsigned long handle = 0;
	int r = create(&handle, NULL, spawn_trampoline, req);
	(void)sys_rt_sigprocmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		rt_free(req);
		return -r;
	}
	if (pthread_detach)
		(void)pthread_detach(handle);
	/* Wait up to 5 s for the thread to mark itself as ours. */
	struct __kernel_timespec ts = { 0, 10 * 1000 * 1000 };
	for (int i = 0; i < 500 && !atomic_load(&req->started); i++)
		(void)sys_futex((volatile int *)&req->started, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, &ts);
	spawn_request_put(req);
	return 0;
}

void thread_mark_own(int tid)
{
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&own_tids[i], &expected, tid))
			return;
	}
	rt_log_once(RT_LOG_WARN, "internal: more than %d threads of our own", OWN_THREADS_MAX);
}

bool thread_is_own(int tid)
{
	for (int i = 0; i < OWN_THREADS_MAX; i++)
		if (atomic_load(&own_tids[i]) == tid)
			return true;
	return false;
}

void thread_forget_own(void)
{
	for (int i = 0; i < OWN_THREADS_MAX; i++)
		atomic_store(&own_tids[i], 0);
}
