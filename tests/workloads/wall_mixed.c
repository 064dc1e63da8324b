/* Threads that mix CPU-heavy system calls, short user work and blocking
 * waits inside one thread, as servers do.  Each thread measures, with the
 * monotonic clock (read through the vDSO: no system call of its own), the
 * wall time spent inside each of its phase functions, so the wall profile
 * can be judged against a truth known by construction.
 *
 *  - readpoll: 10 ms of read(/dev/zero, 256 KiB) in a loop (time spent in
 *    the kernel, on CPU), then a 10 ms blocking poll on an idle pipe.
 *  - epoll: an event loop: epoll_wait on a pipe that a feeder thread writes
 *    every 1 to 3 ms; each event is handled by ~1 ms of user work in
 *    handle_work() and 2 MiB of write() into a memory file in reply_write().
 *  - pipewrite: write() of 64 KiB blocks into a pipe whose reader drains
 *    it at half the writer's pace, so write blocks about half the time,
 *    alternating with user work in produce().
 * Output after SECONDS, one line per measured function, and two per thread
 * with the time it spent waiting for a CPU and on one (from its schedstat;
 * -1 if not readable):
 *   phase THREAD FUNCTION WALL_NS LIFETIME_NS
 *   delay THREAD RUN_DELAY_NS LIFETIME_NS
 *   oncpu THREAD RUN_NS LIFETIME_NS
 * Usage: wall_mixed SECONDS [readpoll|eventloop|pipewriter|all] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* Built with -fno-optimize-sibling-calls: each phase function stays on the
 * stack of what it calls. */
#define NOINLINE __attribute__((noinline))

static atomic_int stop;
static char zero_buf[256 * 1024];
static volatile unsigned long long sink;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

struct phase {
	const char *name;
	long long wall;
};
struct measure {
	long long w0;
};
static void begin(struct measure *m) { m->w0 = now_ns(); }
static void end(struct measure *m, struct phase *p) { p->wall += now_ns() - m->w0; }

/* The calling thread's time on a CPU and time spent waiting for one
 * (schedstat), or -1 each. */
static void schedstat(long long *run_ns, long long *delay_ns)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", (long)gettid());
	*run_ns = *delay_ns = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	unsigned long long run, delay;
	if (fscanf(f, "%llu %llu", &run, &delay) == 2) {
		*run_ns = (long long)run;
		*delay_ns = (long long)delay;
	}
	fclose(f);
}

static void report(const char *thread, const struct phase *ph, int n, long long life)
{
	long long run, delay;
	schedstat(&run, &delay);
	for (int i = 0; i < n; i++)
		printf("phase %s %s %lld %lld\n", thread, ph[i].name, ph[i].wall, life);
	printf("delay %s %lld %lld\n", thread, delay, life);
	printf("oncpu %s %lld %lld\n", thread, run, life);
}

/* Spins in user code for about `ns` (the monotonic clock is read through
 * the vDSO: no system call inside the spin). */
static NOINLINE void user_spin(long long ns)
{
	long long until = now_ns() + ns;
	unsigned long long x = sink;
	while (now_ns() < until)
		for (int i = 0; i < 2000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/* ---- readpoll ---- */

static NOINLINE void read_phase(int fd)
{
	long long until = now_ns() + 10000000;
	while (now_ns() < until) {
		if (read(fd, zero_buf, sizeof(zero_buf)) != (long)sizeof(zero_buf))
			abort();
	}
}

static NOINLINE void poll_phase(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 10) < 0)
		abort();
}

static void *readpoll_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "readpoll");
	int zero = open("/dev/zero", O_RDONLY);
	int idle[2];
	if (zero < 0 || pipe(idle) != 0)
		abort();
	struct phase ph[2] = { { "read_phase", 0 }, { "poll_phase", 0 } };
	long long born = now_ns();
	while (!atomic_load(&stop)) {
		struct measure m;
		begin(&m);
		read_phase(zero);
		end(&m, &ph[0]);
		begin(&m);
		poll_phase(idle[0]);
		end(&m, &ph[1]);
	}
	report("readpoll", ph, 2, now_ns() - born);
	return NULL;
}

/* ---- epoll ---- */

static int feed_pipe[2];

static void *feeder_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "feeder");
	unsigned seed = 12345;
	while (!atomic_load(&stop)) {
		char c = 'x';
		if (write(feed_pipe[1], &c, 1) != 1)
			abort();
		/* 1 to 3 ms, so that events do not keep step with the kernel's tick. */
		seed = seed * 1103515245u + 12345u;
		struct timespec pause = { 0, 1000000 + (long)(seed >> 8) % 2000000 };
		nanosleep(&pause, NULL);
	}
	char c = 'q';
	if (write(feed_pipe[1], &c, 1) != 1)
		abort();
	return NULL;
}

static NOINLINE int wait_events(int ep, struct epoll_event *ev)
{
	return epoll_wait(ep, ev, 4, 1000);
}

static NOINLINE void handle_work(void) { user_spin(1000000); }

/* Copies into a memory file's page cache: CPU time in the kernel. */
static NOINLINE void reply_write(int file)
{
	if (lseek(file, 0, SEEK_SET) != 0)
		abort();
	for (int i = 0; i < 8; i++)
		if (write(file, zero_buf, sizeof(zero_buf)) != (long)sizeof(zero_buf))
			abort();
}

static void *epoll_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "eventloop");
	int ep = epoll_create1(0);
	int reply = memfd_create("reply", 0);
	struct epoll_event add = { .events = EPOLLIN, .data.fd = feed_pipe[0] };
	if (ep < 0 || reply < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, feed_pipe[0], &add) != 0)
		abort();
	struct phase ph[3] = { { "wait_events", 0 }, { "handle_work", 0 }, { "reply_write", 0 } };
	long long born = now_ns();
	for (int done = 0; !done;) {
		struct epoll_event ev[4];
		struct measure m;
		begin(&m);
		int n = wait_events(ep, ev);
		end(&m, &ph[0]);
		for (int i = 0; i < n; i++) {
			char buf[64];
			long got = read(feed_pipe[0], buf, sizeof(buf));
			for (long k = 0; k < got; k++)
				done |= buf[k] == 'q';
			begin(&m);
			handle_work();
			end(&m, &ph[1]);
			begin(&m);
			reply_write(reply);
			end(&m, &ph[2]);
		}
	}
	report("eventloop", ph, 3, now_ns() - born);
	return NULL;
}

/* ---- pipewrite ---- */

static int slow_pipe[2];

static NOINLINE void produce(void) { user_spin(500000); }

static NOINLINE void push_write(int fd)
{
	if (write(fd, zero_buf, 65536) != 65536)
		abort();
}

static void *drain_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "drainer");
	struct timespec pace = { 0, 2000000 };
	for (;;) {
		long got = read(slow_pipe[0], zero_buf + 65536, 65536);
		if (got <= 0)
			break;
		nanosleep(&pace, NULL);
	}
	return NULL;
}

static void *pipewrite_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "pipewriter");
	struct phase ph[2] = { { "produce", 0 }, { "push_write", 0 } };
	long long born = now_ns();
	while (!atomic_load(&stop)) {
		struct measure m;
		begin(&m);
		produce();
		end(&m, &ph[0]);
		begin(&m);
		push_write(slow_pipe[1]);
		end(&m, &ph[1]);
	}
	report("pipewriter", ph, 2, now_ns() - born);
	close(slow_pipe[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 4.0;
	const char *only = argc > 2 ? argv[2] : "all";
	if (pipe(feed_pipe) != 0 || pipe(slow_pipe) != 0)
		abort();
	/* The pipe holds one 64 KiB block: the writer waits for the drainer. */
	if (fcntl(slow_pipe[1], F_SETPIPE_SZ, 65536) < 0)
		abort();
	struct {
		const char *scenario;
		void *(*main)(void *);
	} all[5] = { { "readpoll", readpoll_main }, { "eventloop", epoll_main }, { "eventloop", feeder_main },
		     { "pipewriter", pipewrite_main }, { "pipewriter", drain_main } };
	pthread_t th[5];
	int n = 0;
	for (int i = 0; i < 5; i++)
		if (strcmp(only, "all") == 0 || strcmp(only, all[i].scenario) == 0)
			if (pthread_create(&th[n++], NULL, all[i].main, NULL) != 0)
				abort();
	if (n == 0)
		abort();
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	fflush(stdout);
	return 0;
}
