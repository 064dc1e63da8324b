/* Fuzz the DNS answer parser, /etc/hosts and resolv.conf parsers. */
#include <stddef.h>
#include <stdint.h>

#include "export/dns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct export_dns_addr out[EXPORT_DNS_MAX_ADDRS];
	uint16_t id = size >= 2 ? (uint16_t)(data[0] << 8 | data[1]) : 0;
	int n = export_dns_parse_response(data, size, id, "agent.example.com", EXPORT_DNS_TYPE_A,
					  out, EXPORT_DNS_MAX_ADDRS);
	if (n > EXPORT_DNS_MAX_ADDRS || n < -2)
		__builtin_trap();
	n = export_dns_parse_response(data, size, id, "h", EXPORT_DNS_TYPE_AAAA, out, 2);
	if (n > 2 || n < -2)
		__builtin_trap();
	size_t h = export_hosts_lookup((const char *)data, size, "agent", out, 3);
	if (h > 3)
		__builtin_trap();
	struct export_resolv_conf conf;
	export_resolv_conf_parse((const char *)data, size, &conf);
	if (conf.n_servers < 1 || conf.n_servers > EXPORT_DNS_MAX_SERVERS ||
	    conf.n_search > EXPORT_DNS_MAX_SEARCH || conf.ndots > 15)
		__builtin_trap();
	return 0;
}
