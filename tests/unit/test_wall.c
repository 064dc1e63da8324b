/* Wall profiler: /proc/.../syscall and schedstat parsing and syscall
 * states, against the kernel's own output for threads in known states. */
#define _GNU_SOURCE
#include "check.h"
#include "collect/wall.h"
#include "rt/thread.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Stand-ins for rt/thread.c: these tests start no sampler thread. */
int thread_spawn(void *(*fn)(void *), void *arg)
{
	(void)fn;
	(void)arg;
	return -38;
}
bool thread_is_own(int tid)
{
	(void)tid;
	return false;
}

static void test_parse_running(void)
{
	struct wall_syscall_info si;
	CHECK(wall_parse_syscall("running\n", 8, &si));
	CHECK(si.nr == -2);
}

static void test_parse_not_in_syscall(void)
{
	const char *t = "-1 0x7ffd5a1c3e88 0x55d0c2a0f1b2\n";
	struct wall_syscall_info si;
	CHECK(wall_parse_syscall(t, strlen(t), &si));
	CHECK(si.nr == -1);
	CHECK_EQ_U64(si.sp, 0x7ffd5a1c3e88ull);
	CHECK_EQ_U64(si.pc, 0x55d0c2a0f1b2ull);
}

static void test_parse_in_syscall(void)
{
	const char *t = "230 0x0 0x0 0x7fcb5df05e90 0x7fcb5df05e90 0x0 0x7fcb5df066c0 0x7fcb5df05e50 0x7fcb5dfd9545\n";
	struct wall_syscall_info si;
	CHECK(wall_parse_syscall(t, strlen(t), &si));
	CHECK(si.nr == 230);
	CHECK_EQ_U64(si.arg0, 0);
	CHECK_EQ_U64(si.sp, 0x7fcb5df05e50ull);
	CHECK_EQ_U64(si.pc, 0x7fcb5dfd9545ull);
}

static void test_parse_rejects_malformed(void)
{
	const char *bad[] = { "", "runnin", "running x", "230 0x0 0x0", "230 0x0 0x0 0x0 0x0 0x0 0x0 0x0 zz",
			      "-1 0x1", "-2 0x1 0x2", "abc", "230 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0",
			      "99999999 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct wall_syscall_info si;
		if (wall_parse_syscall(bad[i], strlen(bad[i]), &si)) {
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
			CHECK(0);
		}
	}
}

static void test_parse_schedstat(void)
{
	uint64_t delay = 0, slices = 0;
	CHECK(wall_parse_schedstat("472749 105389 3\n", 16, &delay, &slices));
	CHECK_EQ_U64(delay, 105389);
	CHECK_EQ_U64(slices, 3);
	const char *bad[] = { "", "1 2", "1 2 x", "1 2 3 4", "-1 2 3", "1  2 3\nx", "a b c" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (wall_parse_schedstat(bad[i], strlen(bad[i]), &delay, &slices)) {
			fprintf(stderr, "  accepted \"%s\"\n", bad[i]);
			CHECK(0);
		}
	}
	/* The kernel's own text for this thread: it has run. */
	char path[64], text[128];
	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
	int fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	long n = fd >= 0 ? read(fd, text, sizeof(text)) : -1;
	if (fd >= 0)
		close(fd);
	CHECK(n > 0 && wall_parse_schedstat(text, (size_t)n, &delay, &slices) && slices > 0);
}

static void test_states_of_syscalls(void)
{
	CHECK(wall_state_of_syscall(0, SYS_nanosleep, 0) == WALL_STATE_SLEEPING);
	CHECK(wall_state_of_syscall(0, SYS_clock_nanosleep, 0) == WALL_STATE_SLEEPING);
	CHECK(wall_state_of_syscall(0, SYS_futex, 0) == WALL_STATE_WAITING);
	CHECK(wall_state_of_syscall(0, SYS_epoll_pwait, 0) == WALL_STATE_WAITING);
	CHECK(wall_state_of_syscall(0, SYS_wait4, 0) == WALL_STATE_WAITING);
	CHECK(wall_state_of_syscall(0, SYS_recvfrom, 0) == WALL_STATE_NETWORK);
	CHECK(wall_state_of_syscall(0, SYS_accept4, 0) == WALL_STATE_NETWORK);
	CHECK(wall_state_of_syscall(0, SYS_getpid, 0) == WALL_STATE_SYSCALL);
	CHECK(strcmp(wall_state_name(WALL_STATE_RUNNING), "running") == 0);
	CHECK(strcmp(wall_state_name(WALL_STATE_NETWORK), "network") == 0);
	CHECK(strcmp(wall_state_name(WALL_STATE_COUNT), "unknown") == 0);
}

/* read() is classified by what its descriptor is. */
static void test_read_state_follows_descriptor(void)
{
	int p[2], s[2];
	CHECK(pipe(p) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	int f = open("/proc/self/status", O_RDONLY);
	CHECK(f >= 0);
	CHECK(wall_state_of_syscall(0, SYS_read, (uint64_t)p[0]) == WALL_STATE_WAITING);
	CHECK(wall_state_of_syscall(0, SYS_read, (uint64_t)s[0]) == WALL_STATE_NETWORK);
	CHECK(wall_state_of_syscall(0, SYS_read, (uint64_t)f) == WALL_STATE_IO);
	/* Through the blocked thread's own table. */
	int tid = (int)syscall(SYS_gettid);
	CHECK(wall_state_of_syscall(tid, SYS_read, (uint64_t)p[0]) == WALL_STATE_WAITING);
	CHECK(wall_state_of_syscall(tid, SYS_read, (uint64_t)s[0]) == WALL_STATE_NETWORK);
	close(p[0]), close(p[1]), close(s[0]), close(s[1]), close(f);
}

static volatile int sleeper_tid;
static volatile int sleeper_stop;
static void *sleeper(void *arg)
{
	(void)arg;
	sleeper_tid = (int)syscall(SYS_gettid);
	while (!sleeper_stop) {
		struct timespec ts = { 1, 0 };
		syscall(SYS_nanosleep, &ts, NULL);
	}
	return NULL;
}

/* The kernel's text for a thread blocked in nanosleep parses to that call. */
static void test_parse_kernel_output(void)
{
	pthread_t t;
	sleeper_tid = 0;
	sleeper_stop = 0;
	CHECK(pthread_create(&t, NULL, sleeper, NULL) == 0);
	/* Until the thread is in its nanosleep (a loaded machine may take
	 * a while to run it), at most 10 s. */
	char path[64], text[256];
	int fd = -1;
	ssize_t n = -1;
	for (int tries = 0; tries < 1000; tries++) {
		struct timespec wait = { 0, 10 * 1000000 };
		nanosleep(&wait, NULL);
		if (sleeper_tid == 0)
			continue;
		if (fd < 0) {
			snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", sleeper_tid);
			fd = open(path, O_RDONLY);
		}
		n = fd >= 0 ? pread(fd, text, sizeof(text) - 1, 0) : -1;
		struct wall_syscall_info probe;
		if (n > 0 && wall_parse_syscall(text, (size_t)n, &probe) && probe.nr == SYS_nanosleep)
			break;
	}
	CHECK(fd >= 0);
	CHECK(n > 0);
	struct wall_syscall_info si;
	CHECK(n > 0 && wall_parse_syscall(text, (size_t)n, &si));
	CHECK(si.nr == SYS_nanosleep);
	CHECK(si.sp != 0 && si.pc != 0);
	CHECK(wall_state_of_syscall(0, si.nr, si.arg0) == WALL_STATE_SLEEPING);
	char self_path[64];
	snprintf(self_path, sizeof(self_path), "/proc/self/task/%d/syscall", (int)syscall(SYS_gettid));
	int self_fd = open(self_path, O_RDONLY);
	n = self_fd >= 0 ? read(self_fd, text, sizeof(text) - 1) : -1;
	/* Reading our own file: we are in read(2) ourselves, never "running". */
	CHECK(n > 0 && wall_parse_syscall(text, (size_t)n, &si) && si.nr == SYS_read);
	if (fd >= 0)
		close(fd);
	if (self_fd >= 0)
		close(self_fd);
	sleeper_stop = 1;
	pthread_join(t, NULL);
}

int main(void)
{
	RUN(test_parse_running);
	RUN(test_parse_not_in_syscall);
	RUN(test_parse_in_syscall);
	RUN(test_parse_rejects_malformed);
	RUN(test_parse_schedstat);
	RUN(test_states_of_syscalls);
	RUN(test_read_state_follows_descriptor);
	RUN(test_parse_kernel_output);
	return CHECK_DONE();
}
