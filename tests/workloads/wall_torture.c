/* Wall-profiler torture workload: one thread per blocking call, each
 * waiting in its call almost all of the time and counting every EINTR and
 * every short read, plus one thread burning CPU.
 *
 * Usage: wall_torture SECONDS [naive]
 * "naive" is the negative control: the main thread itself signals every
 * worker every millisecond (handler with SA_RESTART), as a naive wall
 * profiler would; the counters must then show EINTRs.
 * Output, one line per thread:
 *   result NAME FUNCTION calls eintr short_reads other_errors wall_ns
 * where FUNCTION is the noinline function the thread waits in (the wall
 * profile must put that thread's time under it) and wall_ns the thread's
 * lifetime as it measured it.  Helper threads (feeders, the lock holder)
 * are named helper-*.  Exit status 0 unless setup failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define MSG 64
#define WAIT_MS 3

static atomic_int stop;

struct counters {
	const char *name;
	const char *function;
	long calls, eintr, short_reads, errors;
	long long start_ns, end_ns;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* errno must be read after the call: use COUNT_RC(c, call). */
#define COUNT_RC(c, call)                                                      \
	do {                                                                   \
		long rc_ = (long)(call);                                       \
		count_rc((c), rc_, errno);                                     \
	} while (0)

static void count_rc(struct counters *c, long rc, int err)
{
	c->calls++;
	if (rc < 0 && err == EINTR)
		c->eintr++;
	else if (rc < 0 && err != ETIMEDOUT)
		c->errors++;
}

static void count_code(struct counters *c, int code)
{
	c->calls++;
	if (code == EINTR)
		c->eintr++;
	else if (code != 0 && code != ETIMEDOUT)
		c->errors++;
}

static void count_read(struct counters *c, long n)
{
	int err = errno;
	c->calls++;
	if (n < 0 && err == EINTR)
		c->eintr++;
	else if (n >= 0 && n != MSG)
		c->short_reads++;
	else if (n < 0)
		c->errors++;
}

static struct timespec ms_later(int ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000l;
	while (ts.tv_nsec >= 1000000000l) {
		ts.tv_nsec -= 1000000000l;
		ts.tv_sec++;
	}
	return ts;
}

/* ---- the waiting functions ---- */

static int pipe_fds[2], stream_fds[2], timeo_fds[2], listen_fd, epoll_fd;
static char listen_path[108];
static sem_t never_posted;
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_signalled = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int held_ready;
static atomic_long held_generation; /* bumped by the holder at each acquisition */

NOINLINE static void wait_nanosleep(struct counters *c)
{
	struct timespec ts = { 0, WAIT_MS * 1000000l };
	COUNT_RC(c, nanosleep(&ts, NULL));
}

NOINLINE static void wait_clock_nanosleep(struct counters *c)
{
	struct timespec ts = { 0, WAIT_MS * 1000000l };
	count_code(c, clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL));
}

NOINLINE static void wait_usleep(struct counters *c) { COUNT_RC(c, usleep(WAIT_MS * 1000)); }

NOINLINE static void wait_read_pipe(struct counters *c)
{
	char buf[MSG];
	count_read(c, read(pipe_fds[0], buf, MSG));
}

NOINLINE static void wait_read_socket(struct counters *c)
{
	char buf[MSG];
	count_read(c, read(stream_fds[0], buf, MSG));
}

/* The message arrives in two halves 1 ms apart: MSG_WAITALL returns early
 * (a short read) only if a signal interrupts it in between. */
NOINLINE static void wait_recv_timeout(struct counters *c)
{
	char buf[MSG];
	count_read(c, recv(timeo_fds[0], buf, MSG, MSG_WAITALL));
}

NOINLINE static void wait_accept(struct counters *c)
{
	int fd = accept(listen_fd, NULL, NULL);
	count_rc(c, fd, errno);
	if (fd >= 0)
		close(fd);
}

NOINLINE static void wait_epoll(struct counters *c)
{
	struct epoll_event ev;
	COUNT_RC(c, epoll_wait(epoll_fd, &ev, 1, WAIT_MS));
}

NOINLINE static void wait_poll(struct counters *c) { COUNT_RC(c, poll(NULL, 0, WAIT_MS)); }

NOINLINE static void wait_select(struct counters *c)
{
	struct timeval tv = { 0, WAIT_MS * 1000 };
	COUNT_RC(c, select(0, NULL, NULL, NULL, &tv));
}

NOINLINE static void wait_ppoll(struct counters *c)
{
	struct timespec ts = { 0, WAIT_MS * 1000000l };
	COUNT_RC(c, ppoll(NULL, 0, &ts, NULL));
}

NOINLINE static void wait_sem_timedwait(struct counters *c)
{
	struct timespec ts = ms_later(WAIT_MS);
	COUNT_RC(c, sem_timedwait(&never_posted, &ts));
}

NOINLINE static void wait_cond_timedwait(struct counters *c)
{
	struct timespec ts = ms_later(WAIT_MS);
	pthread_mutex_lock(&cond_mutex);
	count_code(c, pthread_cond_timedwait(&never_signalled, &cond_mutex, &ts));
	pthread_mutex_unlock(&cond_mutex);
}

NOINLINE static void wait_mutex_lock(struct counters *c)
{
	long gen = atomic_load(&held_generation);
	count_code(c, pthread_mutex_lock(&held));
	pthread_mutex_unlock(&held);
	/* Let the holder take it back (no barging): wait in the lock, not here. */
	while (atomic_load(&held_generation) == gen && !atomic_load(&stop))
		sched_yield();
}

/* The child wait_waitpid waits for.  Forking takes the parent off a CPU too
 * (0.4 ms a fork here, up to tens under load): a frame of its own keeps that
 * time apart from the wait on waitpid. */
NOINLINE static pid_t fork_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct timespec ts = { 0, 20 * 1000000l };
		while (nanosleep(&ts, &ts) != 0)
			;
		_exit(0);
	}
	return pid;
}

NOINLINE static void wait_waitpid(struct counters *c)
{
	pid_t pid = fork_child();
	if (pid < 0) {
		c->errors++;
		return;
	}
	int status;
	pid_t r;
	do {
		r = waitpid(pid, &status, 0);
		count_rc(c, r, errno);
	} while (r < 0 && errno == EINTR);
}

static volatile double burn_sink;
NOINLINE static void burn_cpu(struct counters *c)
{
	double x = 1.0;
	for (int i = 0; i < 200000; i++)
		x = x * 1.0000001 + 0.5 / (x + i);
	burn_sink = x;
	c->calls++;
}

/* ---- threads ---- */

struct worker {
	const char *name;
	const char *function;
	void (*wait)(struct counters *);
	struct counters c;
	pthread_t thread;
};

/* WALL_TORTURE_GATE set: workers start once main has created them all, so
 * no fork overlaps a thread creation (QEMU's user mode deadlocks a fork
 * child that creates a thread then: docs/arm64.md). */
static atomic_int gate_open = 1;

static void *worker_main(void *p)
{
	struct worker *w = p;
	prctl(PR_SET_NAME, w->name, 0, 0, 0);
	while (!atomic_load(&gate_open))
		sched_yield();
	w->c.start_ns = now_ns();
	while (!atomic_load(&stop))
		w->wait(&w->c);
	w->c.end_ns = now_ns();
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000l };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

static void *feeder_main(void *p)
{
	(void)p;
	prctl(PR_SET_NAME, "helper-feeder", 0, 0, 0);
	char msg[MSG];
	memset(msg, 'x', sizeof(msg));
	while (!atomic_load(&stop)) {
		write_all(pipe_fds[1], msg, MSG);
		write_all(stream_fds[1], msg, MSG);
		write_all(timeo_fds[1], msg, MSG / 2);
		sleep_ms(1);
		write_all(timeo_fds[1], msg + MSG / 2, MSG / 2);
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		memcpy(sa.sun_path, listen_path, sizeof(sa.sun_path));
		if (fd >= 0) {
			connect(fd, (struct sockaddr *)&sa, sizeof(sa));
			close(fd);
		}
		sleep_ms(WAIT_MS);
	}
	/* Wake the blocked readers one last time so they can see `stop`. */
	write_all(pipe_fds[1], msg, MSG);
	write_all(stream_fds[1], msg, MSG);
	write_all(timeo_fds[1], msg, MSG);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, listen_path, sizeof(sa.sun_path));
	if (fd >= 0) {
		connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
	}
	return NULL;
}

/* Holds `held` nearly all the time, releasing it for an instant every 50 ms. */
static void *holder_main(void *p)
{
	(void)p;
	prctl(PR_SET_NAME, "helper-holder", 0, 0, 0);
	pthread_mutex_lock(&held);
	atomic_fetch_add(&held_generation, 1);
	atomic_store(&held_ready, 1);
	while (!atomic_load(&stop)) {
		sleep_ms(50);
		pthread_mutex_unlock(&held);
		sched_yield();
		pthread_mutex_lock(&held);
		atomic_fetch_add(&held_generation, 1);
	}
	pthread_mutex_unlock(&held);
	return NULL;
}

#define W(fn) { #fn, #fn, fn, { 0 }, 0 }
static struct worker workers[] = {
	W(wait_nanosleep),  W(wait_clock_nanosleep), W(wait_usleep),        W(wait_read_pipe),
	W(wait_read_socket), W(wait_recv_timeout),   W(wait_accept),        W(wait_epoll),
	W(wait_poll),       W(wait_select),          W(wait_ppoll),         W(wait_sem_timedwait),
	W(wait_cond_timedwait), W(wait_mutex_lock),  W(wait_waitpid),       W(burn_cpu),
};

static int setup(void)
{
	if (pipe(pipe_fds) || socketpair(AF_UNIX, SOCK_STREAM, 0, stream_fds) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, timeo_fds))
		return -1;
	struct timeval tv = { 1, 0 };
	if (setsockopt(timeo_fds[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -1;
	snprintf(listen_path, sizeof(listen_path), "/tmp/wall_torture.%d.sock", (int)getpid());
	unlink(listen_path);
	listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, listen_path, sizeof(sa.sun_path));
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(listen_fd, 64))
		return -1;
	epoll_fd = epoll_create1(0);
	if (epoll_fd < 0 || sem_init(&never_posted, 0, 0))
		return -1;
	return 0;
}

static void naive_handler(int sig) { (void)sig; }

/* The negative control: signal every worker each millisecond. */
static void signal_workers(double seconds, size_t n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = naive_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	long long end = now_ns() + (long long)(seconds * 1e9);
	while (now_ns() < end) {
		for (size_t i = 0; i < n; i++)
			pthread_kill(workers[i].thread, SIGUSR2);
		sleep_ms(1);
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;
	int naive = argc > 2 && strcmp(argv[2], "naive") == 0;
	if (setup() != 0) {
		perror("setup");
		return 2;
	}
	if (getenv("WALL_TORTURE_GATE"))
		atomic_store(&gate_open, 0);
	pthread_t feeder, holder;
	pthread_create(&holder, NULL, holder_main, NULL);
	while (!atomic_load(&held_ready))
		sched_yield();
	pthread_create(&feeder, NULL, feeder_main, NULL);
	size_t n = sizeof(workers) / sizeof(workers[0]);
	for (size_t i = 0; i < n; i++)
		pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
	atomic_store(&gate_open, 1);
	if (naive)
		signal_workers(seconds, n);
	else
		sleep_ms((int)(seconds * 1000));
	atomic_store(&stop, 1);
	pthread_join(holder, NULL);
	pthread_join(feeder, NULL);
	for (size_t i = 0; i < n; i++)
		pthread_join(workers[i].thread, NULL);
	unlink(listen_path);
	for (size_t i = 0; i < n; i++) {
		struct counters *c = &workers[i].c;
		printf("result %s %s %ld %ld %ld %ld %lld\n", workers[i].name, workers[i].function,
		       c->calls, c->eintr, c->short_reads, c->errors, c->end_ns - c->start_ns);
	}
	return 0;
}
