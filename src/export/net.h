/* Sockets for the exporters: addresses and non-blocking connect/send/recv
 * bounded by CLOCK_MONOTONIC deadlines (names are resolved by resolve.h).
 * Every function returns -errno on failure (-ETIMEDOUT past the deadline)
 * and never blocks past its deadline. */
#ifndef STOWAWAY_EXPORT_NET_H
#define STOWAWAY_EXPORT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT_AF_UNIX 1
#define EXPORT_AF_INET 2
#define EXPORT_AF_INET6 10
#define EXPORT_UNIX_PATH_MAX 108
#define EXPORT_POLLIN 0x001
#define EXPORT_POLLOUT 0x004

/* The kernel's sockaddr_in / sockaddr_in6 / sockaddr_un, one at a time. */
struct export_sockaddr {
	union {
		uint16_t family;
		struct {
			uint16_t family;
			uint16_t port_be;
			uint8_t addr[4];
			uint8_t zero[8];
		} in4;
		struct {
			uint16_t family;
			uint16_t port_be;
			uint32_t flowinfo;
			uint8_t addr[16];
			uint32_t scope_id;
		} in6;
		struct {
			uint16_t family;
			char path[EXPORT_UNIX_PATH_MAX];
		} un;
	} u;
	unsigned len; /* bytes of u the kernel should read */
};

void export_sockaddr_ipv4(struct export_sockaddr *a, const uint8_t ip[4], uint16_t port);
void export_sockaddr_ipv6(struct export_sockaddr *a, const uint8_t ip[16], uint16_t port);
/* -ENAMETOOLONG if the path does not fit sun_path. */
int export_sockaddr_unix(struct export_sockaddr *a, const char *path);

/* "127.0.0.1:8126" / "[::1]:8126" / the unix path, for log lines. */
void export_sockaddr_format(const struct export_sockaddr *a, char *buf, size_t cap);

/* Non-blocking stream connect; returns the fd (close-on-exec) or -errno. */
int export_connect(const struct export_sockaddr *a, uint64_t deadline_ns);
/* Waits until fd is ready for `events` (EXPORT_POLLIN / EXPORT_POLLOUT); 0 or -errno. */
int export_wait_fd(int fd, short events, uint64_t deadline_ns);
/* Sends all n bytes (MSG_NOSIGNAL: a closed peer never raises SIGPIPE). */
int export_send_all(int fd, const void *p, size_t n, uint64_t deadline_ns);
/* Receives at least one byte: count, 0 at end of stream, or -errno. */
long export_recv_some(int fd, void *p, size_t n, uint64_t deadline_ns);

#endif
