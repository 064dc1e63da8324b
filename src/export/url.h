/* Endpoint URLs of the exporters: http://host[:port][/path],
 * https://host[:port][/path] and unix:///absolute/socket/path.
 * Hosts are names, IPv4 literals or bracketed IPv6 literals. */
#ifndef STOWAWAY_EXPORT_URL_H
#define STOWAWAY_EXPORT_URL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* export_parse_ipv4/6: URL hosts may be IP literals. */
#include "export/ip.h"

enum export_url_scheme { EXPORT_URL_HTTP, EXPORT_URL_HTTPS, EXPORT_URL_UNIX };

#define EXPORT_URL_HOST_MAX 256  /* DNS names are at most 253 bytes */
#define EXPORT_URL_PATH_MAX 1024

struct export_url {
	enum export_url_scheme scheme;
	char host[EXPORT_URL_HOST_MAX]; /* without brackets; empty for unix */
	bool host_is_ipv6;              /* the host was a bracketed literal */
	uint16_t port;                  /* explicit, else 80 / 443; 0 for unix */
	/* http(s): path and query ("" when absent, never a fragment);
	 * unix: the socket path. */
	char path[EXPORT_URL_PATH_MAX];
};

/* Parses s[0..n).  Rejects userinfo, fragments, empty hosts, ports outside
 * 1..65535, control characters and spaces, and anything that does not fit.
 * Returns false (out unspecified) on malformed input. */
bool export_url_parse(const char *s, size_t n, struct export_url *out);

#endif
