/* Reading a thread's state from outside: the text of
 * /proc/self/task/TID/syscall and schedstat, and what the system call it names says about
 * the wait (sleeping, waiting, network, io).  Pure parsing of outside input,
 * kept apart so it can be fuzzed alone (tests/fuzz/fuzz_config.c). */
#include "collect/wall.h"
#include "rt/sys.h"

/* ---- states ---- */

static const char *const state_names[WALL_STATE_COUNT] = {
	"running", "sleeping", "waiting", "network", "io", "syscall",
};

const char *wall_state_name(enum wall_state s)
{
	return (unsigned)s < WALL_STATE_COUNT ? state_names[s] : "unknown";
}

enum wall_state wall_state_of_fd(int tid, int fd)
{
	char path[64], target[64];
	if (tid > 0)
		rt_snprintf(path, sizeof(path), "/proc/self/task/%d/fd/%d", tid, fd);
	else
		rt_snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	long n = sys_readlinkat(AT_FDCWD, path, target, sizeof(target) - 1);
	if (n <= 0)
		return WALL_STATE_IO;
	if (rt_starts_with(target, "socket:"))
		return WALL_STATE_NETWORK;
	if (rt_starts_with(target, "pipe:"))
		return WALL_STATE_WAITING;
	return WALL_STATE_IO;
}

static bool is_fd_call(long nr)
{
	return nr == __NR_read || nr == __NR_readv || nr == __NR_pread64 || nr == __NR_write ||
	       nr == __NR_writev || nr == __NR_pwrite64;
}

enum wall_state wall_state_of_syscall(int tid, long nr, uint64_t arg0)
{
	static const long sleeping[] = {
		__NR_nanosleep, __NR_clock_nanosleep,
#ifdef __NR_pause
		__NR_pause,
#endif
	};
	static const long waiting[] = {
		__NR_futex, __NR_epoll_pwait, __NR_ppoll, __NR_pselect6, __NR_wait4, __NR_waitid,
		__NR_rt_sigtimedwait, __NR_rt_sigsuspend, __NR_semtimedop, __NR_msgrcv, __NR_flock,
#ifdef __NR_epoll_wait
		__NR_epoll_wait,
#endif
#ifdef __NR_poll
		__NR_poll,
#endif
#ifdef __NR_select
		__NR_select,
#endif
#ifdef __NR_epoll_pwait2
		__NR_epoll_pwait2,
#endif
	};
	static const long network[] = {
		__NR_recvfrom, __NR_recvmsg, __NR_recvmmsg, __NR_accept, __NR_accept4,
		__NR_connect, __NR_sendto, __NR_sendmsg, __NR_sendmmsg,
	};
	for (size_t i = 0; i < RT_ARRAY_LEN(sleeping); i++)
		if (nr == sleeping[i])
			return WALL_STATE_SLEEPING;
	for (size_t i = 0; i < RT_ARRAY_LEN(waiting); i++)
		if (nr == waiting[i])
			return WALL_STATE_WAITING;
	for (size_t i = 0; i < RT_ARRAY_LEN(network); i++)
		if (nr == network[i])
			return WALL_STATE_NETWORK;
	if (is_fd_call(nr) && arg0 <= 0x7fffffff)
		return wall_state_of_fd(tid, (int)arg0);
	return WALL_STATE_SYSCALL;
}

/* ---- /proc/self/task/TID/schedstat ---- */

bool wall_parse_schedstat(const char *text, size_t len, uint64_t *run_delay, uint64_t *timeslices)
{
	const char *p = text, *end = text + len;
	uint64_t v[3];
	for (uint32_t i = 0; i < 3; i++) {
		while (p < end && *p == ' ')
			p++;
		const char *e = p;
		while (e < end && *e >= '0' && *e <= '9')
			e++;
		if (e == p || !rt_parse_u64(p, (size_t)(e - p), &v[i]))
			return false;
		p = e;
	}
	if (p < end && *p == '\n')
		p++;
	if (p != end)
		return false;
	*run_delay = v[1];
	*timeslices = v[2];
	return true;
}

/* ---- /proc/self/task/TID/syscall ---- */

static const char *skip_spaces(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\n'))
		p++;
	return p;
}

static const char *token_end(const char *p, const char *end)
{
	while (p < end && *p != ' ' && *p != '\n')
		p++;
	return p;
}

static bool parse_hex_token(const char *p, const char *e, uint64_t *out)
{
	if (e - p < 3 || p[0] != '0' || p[1] != 'x')
		return false;
	return rt_parse_hex_u64(p + 2, (size_t)(e - p - 2), out);
}

bool wall_parse_syscall(const char *text, size_t len, struct wall_syscall_info *out)
{
	const char *p = text, *end = text + len;
	rt_memset(out, 0, sizeof(*out));
	p = skip_spaces(p, end);
	const char *e = token_end(p, end);
	if (e - p == 7 && rt_memcmp(p, "running", 7) == 0) {
		out->nr = -2;
		return skip_spaces(e, end) == end;
	}
	uint64_t v[9];
	uint32_t n = 0;
	bool negative = e > p && *p == '-';
	uint64_t nr;
	if (!rt_parse_u64(p + negative, (size_t)(e - p - negative), &nr) || nr > 0xffff)
		return false;
	for (p = skip_spaces(e, end); p < end && n < RT_ARRAY_LEN(v); p = skip_spaces(e, end)) {
		e = token_end(p, end);
		if (!parse_hex_token(p, e, &v[n]))
			return false;
		n++;
	}
	if (p != end)
		return false;
	if (negative) {
		if (nr != 1 || n != 2)
			return false;
		out->nr = -1;
		out->sp = v[0];
		out->pc = v[1];
		return true;
	}
	if (n != 8)
		return false;
	out->nr = (long)nr;
	out->arg0 = v[0];
	out->sp = v[6];
	out->pc = v[7];
	return true;
}

