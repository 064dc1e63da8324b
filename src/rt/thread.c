/* Creating our own threads without layout-dependent libc calls. */
#include "rt/thread.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/rt.h"
#include "rt/sys.h"

#define OWN_THREADS_MAX 8
#define FUTEX_WAKE_ALL 0x7fffffff

static atomic_int own_tids[OWN_THREADS_MAX];
/* 1 where the thread of own_tids[i] runs on a descriptor table of its own. */
static atomic_int own_private_files[OWN_THREADS_MAX];
/* The process our threads belong to (a vfork child shares this memory). */
static atomic_int own_pid;
/* Threads created and not yet marked as ours: thread_own_run waits for
 * them (a thread spawned without waiting must not miss a request). */
static atomic_int own_starting;
/* Per thread of ours: the futex word it waits on when not the request
 * word, the last request it ran and what that returned. */
static _Atomic(atomic_int *) own_wake[OWN_THREADS_MAX];
static atomic_uint own_done[OWN_THREADS_MAX];
static atomic_long own_result[OWN_THREADS_MAX];

/* The request for our threads, a sequence lock: seq is odd while the caller
 * writes fn and arg, and even once published; our threads sleep on it. */
static struct {
	atomic_int busy; /* one caller at a time */
	atomic_uint seq;
	atomic_int pending;
	atomic_int acks; /* the caller waits on it */
	_Atomic(thread_own_fn) fn;
	atomic_size_t len;
	unsigned char arg[THREAD_OWN_ARG_MAX];
} own_req;

/* The slot of thread tid among ours, or -1. */
static int own_slot_of(int tid)
{
	for (int i = 0; i < OWN_THREADS_MAX; i++)
		if (atomic_load(&own_tids[i]) == tid)
			return i;
	return -1;
}

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

/* Room for a pthread_attr_t of glibc or musl (56 or 64 bytes). */
#define ATTR_BYTES 256

bool thread_stack_bounds(uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	typedef unsigned long (*self_fn)(void);
	typedef int (*getattr_fn)(unsigned long, void *);
	typedef int (*getstack_fn)(const void *, void **, size_t *);
	typedef int (*destroy_fn)(void *);
	static _Atomic(void *) self_sym, getattr_sym, getstack_sym, destroy_sym;
	void *s1 = hook_host_cached(&self_sym, "pthread_self");
	void *s2 = hook_host_cached(&getattr_sym, "pthread_getattr_np");
	void *s3 = hook_host_cached(&getstack_sym, "pthread_attr_getstack");
	void *s4 = hook_host_cached(&destroy_sym, "pthread_attr_destroy");
	if (!s1 || !s2 || !s3 || !s4)
		return false;
	self_fn self;
	getattr_fn getattr;
	getstack_fn getstack;
	destroy_fn destroy;
	HOOK_FN(self, s1);
	HOOK_FN(getattr, s2);
	HOOK_FN(getstack, s3);
	HOOK_FN(destroy, s4);
	_Alignas(16) unsigned char attr[ATTR_BYTES];
	if (getattr(self(), attr) != 0)
		return false;
	void *addr = NULL;
	size_t size = 0;
	int r = getstack(attr, &addr, &size);
	(void)destroy(attr);
	uint64_t from = (uint64_t)(uintptr_t)addr;
	if (r != 0 || size == 0 || from > UINT64_MAX - size || sp < from || sp >= from + size)
		return false;
	*lo = from;
	*hi = from + size;
	return true;
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

/* ---- descriptor tables ---- */

#define FD_DIR_READS_MAX 256
#define FD_BRUTE_MAX 65536

/* Closes every descriptor of the calling thread's private table, on
 * kernels without close_range: the table is listed through
 * /proc/thread-self/fd; without /proc, every number below the descriptor
 * limit is closed (bounded). */
static void close_all_listed(void)
{
	struct rt_dir dir;
	if (rt_dir_open(&dir, AT_FDCWD, "/proc/thread-self/fd", FD_DIR_READS_MAX) == 0) {
		for (const char *name; (name = rt_dir_next(&dir)) != NULL;) {
			uint64_t fd;
			if (rt_parse_u64(name, rt_strlen(name), &fd) && fd <= 0x7fffffff &&
			    (int)fd != dir.fd)
				(void)sys_close((int)fd);
		}
		rt_dir_close(&dir);
		return;
	}
	uint64_t lim[2] = { FD_BRUTE_MAX, FD_BRUTE_MAX };
	(void)SYS4(__NR_prlimit64, 0, 7 /* RLIMIT_NOFILE */, 0, lim);
	int top = (int)RT_MIN(lim[0], (uint64_t)FD_BRUTE_MAX);
	for (int fd = 0; fd < top; fd++)
		(void)sys_close(fd);
}

/* Gives the calling thread (one of ours, just started) a descriptor table
 * of its own holding none of the program's descriptors.  While one of our
 * threads shares the program's table, the kernel takes a reference on the
 * file at every descriptor system call of every thread (its single-owner
 * shortcut no longer applies): ~35 ns per read, write or epoll_wait.  A
 * copy that kept the program's descriptors would keep their files open
 * (a pipe the program closes would never reach EOF), so all are closed.
 * 0, or -errno when the kernel (or a seccomp filter) refuses: the thread
 * then keeps sharing the program's table. */
static long private_files_begin(void)
{
	/* One step: a copy made without the descriptors it would close. */
	long r = sys_close_range(0, ~0u, SYS_CLOSE_RANGE_UNSHARE);
	if (r == 0)
		return 0;
	r = sys_unshare(SYS_CLONE_FILES);
	if (r != 0)
		return r;
	if (sys_close_range(0, ~0u, 0) != 0)
		close_all_listed();
	return 0;
}

bool thread_has_private_files(int tid)
{
	int slot = own_slot_of(tid);
	return slot >= 0 && atomic_load(&own_private_files[slot]) != 0;
}

long thread_program_descriptor(int fd)
{
	/* pidfd_getfd duplicates the program's descriptor itself (a socket,
	 * a pipe without readers, a terminal alike); seccomp policies that
	 * kill the process on an unlisted call commonly leave it out, so it
	 * is used only when no filter is installed. */
	if (sys_prctl(21 /* PR_GET_SECCOMP */, 0, 0, 0, 0) == 0) {
		long pidfd = sys_pidfd_open(sys_getpid(), 0);
		if (pidfd >= 0) {
			long r = sys_pidfd_getfd((int)pidfd, fd, 0);
			(void)sys_close((int)pidfd);
			if (r >= 0)
				return r;
		}
	}
	/* Opening it again through /proc works for pipes, terminals and
	 * files (not sockets); never blocks on a pipe nobody reads. */
	char path[40];
	rt_snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return sys_open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY, 0);
}

/* rt_log's redirect: a line from a thread of ours on a private table goes
 * to the program's fd 2 as it is now. */
static bool log_for_own_thread(const char *line, size_t n)
{
	if (!thread_has_private_files((int)sys_gettid()))
		return false;
	long fd = thread_program_descriptor(2);
	if (fd >= 0) {
		(void)rt_write_all((int)fd, line, n);
		(void)sys_close((int)fd);
	}
	return true;
}

/* CPU time of the threads of ours that ended in this process. */
static atomic_ullong own_ended_cpu_ns;

/* A thread of ours that ends is asked nothing more; its CPU time is kept,
 * added once its tid is out of own_tids (thread_own_cpu_ns may miss it for
 * a moment, never count it twice). */
static void forget_self(int tid)
{
	uint64_t cpu = rt_thread_cpu_ns();
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		if (atomic_load(&own_tids[i]) != tid)
			continue;
		atomic_store(&own_wake[i], NULL);
		atomic_store(&own_private_files[i], 0);
		int expected = tid;
		(void)atomic_compare_exchange_strong(&own_tids[i], &expected, 0);
	}
	atomic_fetch_add(&own_ended_cpu_ns, cpu);
}

/* Shared by the spawner and the new thread; the last one to let go frees it,
 * so neither waits unboundedly for the other. */
struct spawn_request {
	void *(*fn)(void *);
	void *arg;
	atomic_int unmarked; /* 1 until the thread has marked itself as ours */
	atomic_int refs;
};

static void spawn_request_put(struct spawn_request *req)
{
	if (atomic_fetch_sub(&req->refs, 1) == 1)
		rt_free(req);
}

static void starting_done(void)
{
	atomic_fetch_sub(&own_starting, 1);
	(void)sys_futex((volatile int *)&own_starting, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAKE_ALL, NULL);
}

static void *spawn_trampoline(void *p)
{
	struct spawn_request *req = p;
	void *(*fn)(void *) = req->fn;
	void *arg = req->arg;
	long files = private_files_begin();
	/* Marked before the spawner returns: no collector ever profiles us. */
	int tid = (int)sys_gettid();
	thread_mark_own(tid);
	int slot = own_slot_of(tid);
	if (files == 0 && slot >= 0)
		atomic_store(&own_private_files[slot], 1);
	if (files == 0)
		rt_log_set_redirect(log_for_own_thread);
	thread_flag_clear(&req->unmarked);
	starting_done();
	spawn_request_put(req);
	if (files != 0)
		rt_log_once(RT_LOG_DEBUG,
			    "our threads share the program's descriptor table (unshare refused: "
			    "error %ld)", -files);
	void *r = fn(arg);
	forget_self(tid);
	return r;
}

static int spawn(void *(*fn)(void *), void *arg, bool wait)
{
	host_pthread_create_fn create = thread_host_pthread_create();
	if (!create)
		return -ENOSYS;
	struct spawn_request *req = rt_calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->fn = fn;
	req->arg = arg;
	atomic_store(&req->unmarked, 1); /* cleared by the thread once marked */
	atomic_store(&req->refs, 2);
	uint64_t all = host_signals_mask(), old = 0;
	if (sys_rt_sigprocmask(SIG_SETMASK, &all, &old) != 0) {
		rt_free(req);
		return -EINVAL;
	}
	atomic_fetch_add(&own_starting, 1);
	unsigned long handle = 0;
	int r = create(&handle, NULL, spawn_trampoline, req);
	(void)sys_rt_sigprocmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		starting_done();
		rt_free(req);
		return -r;
	}
	if (pthread_detach)
		(void)pthread_detach(handle);
	/* Wait up to 5 s for the thread to mark itself as ours. */
	if (wait)
		(void)thread_flag_wait_clear(&req->unmarked, 5ull * RT_NS_PER_SEC);
	spawn_request_put(req);
	return 0;
}

int thread_spawn(void *(*fn)(void *), void *arg) { return spawn(fn, arg, true); }

int thread_spawn_unwaited(void *(*fn)(void *), void *arg) { return spawn(fn, arg, false); }

void thread_mark_own(int tid)
{
	atomic_store(&own_pid, (int)sys_getpid());
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&own_tids[i], &expected, tid)) {
			atomic_store(&own_wake[i], NULL);
			return;
		}
	}
	rt_log_once(RT_LOG_WARN, "internal: more than %d threads of our own", OWN_THREADS_MAX);
}

bool thread_is_own(int tid) { return own_slot_of(tid) >= 0; }

uint64_t thread_own_cpu_ns(void)
{
	uint64_t sum = atomic_load(&own_ended_cpu_ns);
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		int tid = atomic_load(&own_tids[i]);
		if (tid > 0)
			sum += rt_clock_ns(sys_thread_cpu_clock(tid));
	}
	return sum;
}

void thread_forget_own(void)
{
	atomic_store(&own_ended_cpu_ns, 0);
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		atomic_store(&own_private_files[i], 0);
		atomic_store(&own_tids[i], 0);
		atomic_store(&own_wake[i], NULL);
	}
	/* A request some thread of the parent had in progress is not ours,
	 * nor a thread it was starting. */
	atomic_store(&own_req.pending, 0);
	atomic_store(&own_req.busy, 0);
	atomic_store(&own_starting, 0);
}

/* ---- running a function on every thread of ours ---- */

static void serve(int slot)
{
	unsigned seq = atomic_load_explicit(&own_req.seq, memory_order_acquire);
	if ((seq & 1u) || atomic_load(&own_done[slot]) == seq)
		return;
	unsigned char arg[THREAD_OWN_ARG_MAX];
	thread_own_fn fn = atomic_load(&own_req.fn);
	size_t len = RT_MIN(atomic_load(&own_req.len), sizeof(arg));
	rt_memcpy(arg, own_req.arg, len);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load(&own_req.seq) != seq)
		return; /* rewritten meanwhile: the new request wakes us again */
	long r = fn ? fn(arg) : 0;
	atomic_store(&own_result[slot], r);
	atomic_store_explicit(&own_done[slot], seq, memory_order_release);
	atomic_fetch_add(&own_req.acks, 1);
	(void)sys_futex((volatile int *)&own_req.acks, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAKE_ALL, NULL);
}

void thread_own_service(void)
{
	if (!atomic_load_explicit(&own_req.pending, memory_order_acquire))
		return;
	int slot = own_slot_of((int)sys_gettid());
	if (slot >= 0)
		serve(slot);
}

/* Bumped by thread_own_interrupt: sleepers return early to recheck. */
static atomic_uint own_interrupts;

void thread_own_sleep_until(uint64_t deadline_ns)
{
	unsigned interrupts = atomic_load(&own_interrupts);
	/* Each round ends at the deadline, with a new request or an interrupt. */
	for (int round = 0; round < 1000; round++) {
		int seen = (int)atomic_load(&own_req.seq);
		thread_own_service();
		uint64_t now = rt_monotonic_ns();
		if (now >= deadline_ns || atomic_load(&own_interrupts) != interrupts)
			return;
		struct __kernel_timespec ts = sys_timespec_of_ns(deadline_ns - now);
		(void)sys_futex((volatile int *)&own_req.seq, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, seen, &ts);
	}
}

void thread_own_interrupt(void)
{
	atomic_fetch_add(&own_interrupts, 1);
	(void)sys_futex((volatile int *)&own_req.seq, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAKE_ALL, NULL);
}

void thread_flag_clear(atomic_int *flag)
{
	atomic_store(flag, 0);
	(void)sys_futex((volatile int *)flag, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAKE_ALL, NULL);
}

bool thread_flag_wait_clear(atomic_int *flag, uint64_t timeout_ns)
{
	uint64_t deadline = rt_monotonic_ns() + timeout_ns;
	for (int round = 0; round < 1000; round++) {
		int v = atomic_load(flag);
		if (v == 0)
			return true;
		uint64_t now = rt_monotonic_ns();
		if (now >= deadline)
			return false;
		struct __kernel_timespec ts = sys_timespec_of_ns(deadline - now);
		(void)sys_futex((volatile int *)flag, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, v, &ts);
	}
	return atomic_load(flag) == 0;
}

void thread_own_wake_word(atomic_int *word)
{
	int slot = own_slot_of((int)sys_gettid());
	if (slot >= 0)
		atomic_store(&own_wake[slot], word);
}

/* Publishes the request and wakes every thread of ours. */
static unsigned publish(thread_own_fn fn, const void *arg, size_t len)
{
	unsigned seq = atomic_load(&own_req.seq) | 1u;
	atomic_store(&own_req.seq, seq);
	atomic_thread_fence(memory_order_release);
	atomic_store(&own_req.fn, fn);
	atomic_store(&own_req.len, len);
	rt_memcpy(own_req.arg, arg, len);
	atomic_store_explicit(&own_req.seq, seq + 1, memory_order_release);
	atomic_store(&own_req.pending, 1);
	(void)sys_futex((volatile int *)&own_req.seq, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAKE_ALL, NULL);
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		atomic_int *w = atomic_load(&own_wake[i]);
		if (w && atomic_load(&own_tids[i])) {
			atomic_fetch_add(w, 1);
			(void)sys_futex((volatile int *)w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, FUTEX_WAKE_ALL, NULL);
		}
	}
	return seq + 1;
}

/* Threads of ours, other than the caller, alive and not done with seq. */
static int count_waiting(int pid, int self, unsigned seq)
{
	int waiting = 0;
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		int tid = atomic_load(&own_tids[i]);
		if (tid == 0 || tid == self || atomic_load(&own_done[i]) == seq)
			continue;
		if (sys_tgkill(pid, tid, 0) == -ESRCH)
			continue; /* gone without saying so */
		waiting++;
	}
	return waiting;
}

struct thread_own_outcome thread_own_run(thread_own_fn fn, const void *arg, size_t len,
					 uint64_t timeout_ns)
{
	struct thread_own_outcome o = { 0, 0, 0, 0 };
	if (!fn || len > THREAD_OWN_ARG_MAX)
		return o;
	/* A thread still starting marks itself first, then takes the request
	 * (each one that has marked itself wakes the waiters on the count). */
	uint64_t deadline = rt_monotonic_ns() + timeout_ns;
	(void)thread_flag_wait_clear(&own_starting, timeout_ns);
	if (atomic_load(&own_pid) == 0)
		return o;
	int pid = (int)sys_getpid();
	if (atomic_load(&own_pid) != pid)
		return o;
	bool any = false;
	for (int i = 0; i < OWN_THREADS_MAX && !any; i++)
		any = atomic_load(&own_tids[i]) != 0;
	if (!any)
		return o;
	int self = (int)sys_gettid();
	int expected = 0;
	while (!atomic_compare_exchange_strong(&own_req.busy, &expected, 1)) {
		expected = 0;
		if (rt_monotonic_ns() >= deadline) {
			o.threads = o.late = count_waiting(pid, self, ~0u);
			return o;
		}
		(void)rt_sleep_ns(1000 * 1000);
	}
	unsigned seq = publish(fn, arg, len);
	int mine = own_slot_of(self);
	if (mine >= 0)
		serve(mine);
	for (;;) {
		int acks = atomic_load(&own_req.acks);
		int waiting = count_waiting(pid, self, seq);
		uint64_t now = rt_monotonic_ns();
		if (waiting == 0 || now >= deadline) {
			o.late = waiting;
			break;
		}
		struct __kernel_timespec ts = sys_timespec_of_ns(RT_MIN(deadline - now, 10 * 1000 * 1000ull));
		(void)sys_futex((volatile int *)&own_req.acks, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, acks, &ts);
	}
	/* A late thread still takes it when it next waits, unless another
	 * request replaces it. */
	if (o.late == 0)
		atomic_store(&own_req.pending, 0);
	o.threads = o.late;
	for (int i = 0; i < OWN_THREADS_MAX; i++) {
		if (atomic_load(&own_tids[i]) == 0 || atomic_load(&own_done[i]) != seq)
			continue;
		o.threads++;
		long r = atomic_load(&own_result[i]);
		if (r < 0 && o.failed++ == 0)
			o.error = r;
	}
	atomic_store(&own_req.busy, 0);
	return o;
}
