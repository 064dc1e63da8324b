/* Name resolution without libc.  Every function returns -errno on failure
 * (-ETIMEDOUT past the deadline, -ENOENT for an unknown name) and never
 * blocks past its deadline. */
#ifndef STOWAWAY_EXPORT_RESOLVE_H
#define STOWAWAY_EXPORT_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "export/net.h"

/* Up to `max` addresses of host:port: IP literals and "localhost" directly,
 * else /etc/hosts, else DNS (A and AAAA over UDP to the /etc/resolv.conf
 * nameservers).  Returns the count (> 0) or -errno (-ENOENT: no such name). */
int export_resolve(const char *host, uint16_t port, struct export_sockaddr *out, size_t max,
		   uint64_t deadline_ns);

#endif
