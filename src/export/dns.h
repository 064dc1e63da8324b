/* The texts of host name resolution: /etc/hosts, /etc/resolv.conf, and DNS
 * queries and answers (A and AAAA).  Pure functions over bytes, no sockets,
 * shared with tests and fuzzers; resolve.h sends the queries. */
#ifndef STOWAWAY_EXPORT_DNS_H
#define STOWAWAY_EXPORT_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT_DNS_MAX_ADDRS 8
#define EXPORT_DNS_MAX_SERVERS 3 /* as glibc's MAXNS */
#define EXPORT_DNS_MAX_SEARCH 6
#define EXPORT_DNS_NAME_MAX 254
#define EXPORT_DNS_TYPE_A 1
#define EXPORT_DNS_TYPE_AAAA 28

struct export_dns_addr {
	bool is_ipv6;
	uint8_t ip[16]; /* first 4 bytes for IPv4 */
};

struct export_resolv_conf {
	struct export_dns_addr servers[EXPORT_DNS_MAX_SERVERS];
	size_t n_servers;
	char search[EXPORT_DNS_MAX_SEARCH][EXPORT_DNS_NAME_MAX];
	size_t n_search;
	unsigned ndots; /* default 1 */
};

/* Addresses of `name` in /etc/hosts text; returns how many were stored. */
size_t export_hosts_lookup(const char *text, size_t n, const char *name,
			   struct export_dns_addr *out, size_t max);

/* nameserver / search / domain / options ndots:N lines of resolv.conf text.
 * With no nameserver line the result names 127.0.0.1 (as libc does). */
void export_resolv_conf_parse(const char *text, size_t n, struct export_resolv_conf *out);

/* One recursive query for name/qtype; returns its length or -1 if the name
 * is not a valid DNS name or does not fit. */
int export_dns_build_query(uint8_t *buf, size_t cap, uint16_t id, const char *name,
			   uint16_t qtype);

/* Checks that msg answers the query (id, QR, RCODE, echoed question) and
 * stores the addresses of type qtype from its answer section.  Returns how
 * many were stored, 0 for a well-formed answer without any, -1 for a
 * malformed or unrelated message, -2 for NXDOMAIN. */
int export_dns_parse_response(const uint8_t *msg, size_t n, uint16_t id, const char *name,
			      uint16_t qtype, struct export_dns_addr *out, size_t max);

#endif
