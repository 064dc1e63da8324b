/* IP address literals: pure parsers over bytes, shared by URLs, /etc/hosts,
 * resolv.conf and address resolution. */
#ifndef STOWAWAY_EXPORT_IP_H
#define STOWAWAY_EXPORT_IP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* IPv4 dotted quad (exactly four decimal parts 0..255) -> network order bytes. */
bool export_parse_ipv4(const char *s, size_t n, uint8_t out[4]);
/* IPv6 text form (RFC 4291 section 2.2, "::" compression, optional trailing
 * dotted quad; no zone id) -> network order bytes. */
bool export_parse_ipv6(const char *s, size_t n, uint8_t out[16]);

#endif
