/* Deadline-bounded socket I/O on raw system calls; see net.h. */
#include "export/net.h"

#include "rt/rt.h"
#include "rt/sys.h"

#define SOCK_STREAM_TYPE 1
#define SOCK_NONBLOCK_FLAG O_NONBLOCK
#define SOCK_CLOEXEC_FLAG O_CLOEXEC
#define SOL_SOCKET_LEVEL 1
#define SO_ERROR_OPT 4
#define MSG_NOSIGNAL_FLAG 0x4000
#define MSG_DONTWAIT_FLAG 0x40
#define POLL_ERR_EV 0x008
#define POLL_HUP_EV 0x010

struct poll_entry {
	int fd;
	short events;
	short revents;
};

static uint16_t to_be16(uint16_t v) { return (uint16_t)((v >> 8) | (v << 8)); }

void export_sockaddr_ipv4(struct export_sockaddr *a, const uint8_t ip[4], uint16_t port)
{
	rt_memset(a, 0, sizeof(*a));
	a->u.in4.family = EXPORT_AF_INET;
	a->u.in4.port_be = to_be16(port);
	rt_memcpy(a->u.in4.addr, ip, 4);
	a->len = sizeof(a->u.in4);
}

void export_sockaddr_ipv6(struct export_sockaddr *a, const uint8_t ip[16], uint16_t port)
{
	rt_memset(a, 0, sizeof(*a));
	a->u.in6.family = EXPORT_AF_INET6;
	a->u.in6.port_be = to_be16(port);
	rt_memcpy(a->u.in6.addr, ip, 16);
	a->len = sizeof(a->u.in6);
}

int export_sockaddr_unix(struct export_sockaddr *a, const char *path)
{
	size_t n = rt_strlen(path);
	if (n == 0 || n >= EXPORT_UNIX_PATH_MAX)
		return -ENAMETOOLONG;
	rt_memset(a, 0, sizeof(*a));
	a->u.un.family = EXPORT_AF_UNIX;
	rt_memcpy(a->u.un.path, path, n);
	a->len = (unsigned)(sizeof(uint16_t) + n + 1);
	return 0;
}

void export_sockaddr_format(const struct export_sockaddr *a, char *buf, size_t cap)
{
	if (a->u.family == EXPORT_AF_INET) {
		const uint8_t *ip = a->u.in4.addr;
		rt_snprintf(buf, cap, "%u.%u.%u.%u:%u", ip[0], ip[1], ip[2], ip[3],
			    to_be16(a->u.in4.port_be));
	} else if (a->u.family == EXPORT_AF_INET6) {
		const uint8_t *ip = a->u.in6.addr;
		size_t off = rt_snprintf(buf, cap, "[");
		for (int i = 0; i < 16 && off < cap; i += 2)
			off += rt_snprintf(buf + off, cap - off, i ? ":%x" : "%x",
					   (unsigned)ip[i] << 8 | ip[i + 1]);
		if (off < cap)
			rt_snprintf(buf + off, cap - off, "]:%u", to_be16(a->u.in6.port_be));
	} else {
		rt_snprintf(buf, cap, "unix:%s", a->u.un.path);
	}
}

/* Milliseconds-resolution remaining time, or -ETIMEDOUT. */
static int remaining_timespec(uint64_t deadline_ns, struct __kernel_timespec *ts)
{
	uint64_t now = rt_monotonic_ns();
	if (now >= deadline_ns)
		return -ETIMEDOUT;
	uint64_t left = deadline_ns - now;
	*ts = sys_timespec_of_ns(left);
	return 0;
}

int export_wait_fd(int fd, short events, uint64_t deadline_ns)
{
	/* EINTR can only shorten a wait; each round recomputes the timeout,
	 * and the number of rounds is bounded. */
	for (int round = 0; round < 1000; round++) {
		struct __kernel_timespec ts;
		int rc = remaining_timespec(deadline_ns, &ts);
		if (rc < 0)
			return rc;
		struct poll_entry p = {fd, events, 0};
		long r = sys_ppoll(&p, 1, &ts);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return (int)r;
		if (r == 0)
			continue; /* timed out: the next round reports it */
		if (p.revents & (events | POLL_ERR_EV | POLL_HUP_EV))
			return 0;
	}
	return -ETIMEDOUT;
}

int export_connect(const struct export_sockaddr *a, uint64_t deadline_ns)
{
	long fd = sys_socket(a->u.family, SOCK_STREAM_TYPE | SOCK_NONBLOCK_FLAG | SOCK_CLOEXEC_FLAG,
			     0);
	if (fd < 0)
		return (int)fd;
	long r = sys_connect((int)fd, &a->u, a->len);
	if (r == -EINPROGRESS || r == -EAGAIN || r == -EINTR) {
		/* Unix sockets with a full backlog answer EAGAIN: wait too. */
		int w = export_wait_fd((int)fd, EXPORT_POLLOUT, deadline_ns);
		if (w < 0) {
			sys_close((int)fd);
			return w;
		}
		int err = 0;
		unsigned len = sizeof(err);
		r = sys_getsockopt((int)fd, SOL_SOCKET_LEVEL, SO_ERROR_OPT, &err, &len);
		if (r == 0 && err != 0)
			r = -err;
		if (r == 0 && a->u.family == EXPORT_AF_UNIX) {
			/* A non-blocking unix connect that said EAGAIN did not
			 * connect; try once more now that the peer has room. */
			r = sys_connect((int)fd, &a->u, a->len);
			if (r == -EISCONN)
				r = 0;
		}
	}
	if (r < 0) {
		sys_close((int)fd);
		return (int)r;
	}
	return (int)fd;
}

int export_send_all(int fd, const void *p, size_t n, uint64_t deadline_ns)
{
	const uint8_t *cur = p;
	while (n > 0) {
		long w = sys_sendto(fd, cur, n, MSG_NOSIGNAL_FLAG | MSG_DONTWAIT_FLAG);
		if (w == -EAGAIN || w == -EINTR) {
			int rc = export_wait_fd(fd, EXPORT_POLLOUT, deadline_ns);
			if (rc < 0)
				return rc;
			continue;
		}
		if (w < 0)
			return (int)w;
		if (w == 0)
			return -EPIPE;
		cur += w;
		n -= (size_t)w;
	}
	return 0;
}

long export_recv_some(int fd, void *p, size_t n, uint64_t deadline_ns)
{
	for (int round = 0; round < 1000; round++) {
		long r = sys_recvfrom(fd, p, n, MSG_DONTWAIT_FLAG);
		if (r != -EAGAIN && r != -EINTR)
			return r;
		int rc = export_wait_fd(fd, EXPORT_POLLIN, deadline_ns);
		if (rc < 0)
			return rc;
	}
	return -ETIMEDOUT;
}
