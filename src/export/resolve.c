/* Host names to socket addresses: IP literals, "localhost", /etc/hosts,
 * then DNS over UDP to the resolv.conf nameservers; see resolve.h. */
#include "export/resolve.h"

#include "export/dns.h"
#include "export/ip.h"
#include "export/net.h"
#include "rt/rt.h"
#include "rt/sys.h"

#define DNS_MAX_UDP 1232 /* the EDNS-era safe UDP payload; we send no EDNS */
#define DNS_PER_SERVER_TIMEOUT_NS (2000ull * 1000000ull)
#define HOSTS_FILE_MAX (256 * 1024)
#define RESOLV_FILE_MAX (16 * 1024)

/* Asks one server for A and AAAA of name; returns addresses stored,
 * -ENOENT if the name has none (NXDOMAIN or no records), or another
 * -errno on failure. */
static int query_server(const struct export_dns_addr *server, const char *name,
			struct export_dns_addr *out, size_t max, uint64_t deadline_ns)
{
	static const uint16_t qtypes[2] = {EXPORT_DNS_TYPE_A, EXPORT_DNS_TYPE_AAAA};
	struct export_sockaddr sa;
	if (server->is_ipv6)
		export_sockaddr_ipv6(&sa, server->ip, 53);
	else
		export_sockaddr_ipv4(&sa, server->ip, 53);
	long fd = sys_socket(sa.u.family, 2 /* SOCK_DGRAM */ | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd < 0)
		return (int)fd;
	/* A connected UDP socket only receives datagrams from the server. */
	long rc = sys_connect((int)fd, &sa.u, sa.len);
	uint16_t ids[2];
	if (rc == 0 && !rt_random_bytes(ids, sizeof(ids)))
		rc = -EIO;
	uint8_t buf[DNS_MAX_UDP];
	for (int q = 0; q < 2 && rc == 0; q++) {
		int len = export_dns_build_query(buf, sizeof(buf), ids[q], name, qtypes[q]);
		if (len < 0)
			rc = -EINVAL;
		else
			rc = export_send_all((int)fd, buf, (size_t)len, deadline_ns);
	}
	size_t found = 0;
	bool answered[2] = {false, false};
	/* A bounded number of datagrams: stray or forged ones are skipped. */
	for (int dgram = 0; dgram < 16 && rc == 0 && !(answered[0] && answered[1]); dgram++) {
		long got = export_recv_some((int)fd, buf, sizeof(buf), deadline_ns);
		if (got < 0) {
			rc = got;
			break;
		}
		for (int q = 0; q < 2; q++) {
			if (answered[q])
				continue;
			int r = export_dns_parse_response(buf, (size_t)got, ids[q], name, qtypes[q],
							  out + found, max - found);
			if (r == -1)
				continue;
			answered[q] = true; /* with addresses, none, or NXDOMAIN */
			if (r > 0)
				found += (size_t)r;
		}
	}
	sys_close((int)fd);
	if (found > 0)
		return (int)found;
	if (answered[0] && answered[1])
		return -ENOENT;
	return rc < 0 ? (int)rc : -EIO;
}

/* One name against the nameservers; -ENOENT when it has no address. */
static int query_name(const struct export_resolv_conf *conf, const char *name,
		      struct export_dns_addr *out, size_t max, uint64_t deadline_ns)
{
	int last = -EIO;
	for (size_t s = 0; s < conf->n_servers; s++) {
		uint64_t now = rt_monotonic_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		uint64_t server_deadline = RT_MIN(deadline_ns, now + DNS_PER_SERVER_TIMEOUT_NS);
		last = query_server(&conf->servers[s], name, out, max, server_deadline);
		if (last > 0 || last == -ENOENT)
			return last;
	}
	return last;
}

static size_t count_dots(const char *s)
{
	size_t dots = 0;
	for (; *s; s++)
		dots += *s == '.';
	return dots;
}

/* /etc/hosts, then DNS; count (> 0) or -errno (-ENOENT: unknown name). */
static int dns_resolve(const char *name, struct export_dns_addr *out, size_t max,
		       uint64_t deadline_ns)
{
	size_t name_len = rt_strlen(name);
	if (name_len == 0 || name_len >= EXPORT_DNS_NAME_MAX || max == 0)
		return -EINVAL;
	char *text = rt_malloc(HOSTS_FILE_MAX);
	if (!text)
		return -ENOMEM;
	long len = rt_read_file("/etc/hosts", text, HOSTS_FILE_MAX);
	size_t found = len > 0 ? export_hosts_lookup(text, (size_t)len, name, out, max) : 0;
	if (found > 0) {
		rt_free(text);
		return (int)found;
	}
	struct export_resolv_conf *conf = rt_malloc(sizeof(*conf));
	if (!conf) {
		rt_free(text);
		return -ENOMEM;
	}
	len = rt_read_file("/etc/resolv.conf", text, RESOLV_FILE_MAX);
	export_resolv_conf_parse(text, len > 0 ? (size_t)len : 0, conf);
	rt_free(text);

	/* Candidates in resolver order: search domains first for short names
	 * (fewer dots than ndots), the name as given first otherwise. */
	bool absolute = name[name_len - 1] == '.';
	bool as_is_first = absolute || count_dots(name) >= conf->ndots;
	size_t n_candidates = absolute ? 1 : 1 + conf->n_search;
	int result = -ENOENT;
	char candidate[EXPORT_DNS_NAME_MAX * 2];
	for (size_t c = 0; c < n_candidates; c++) {
		size_t search_index = as_is_first ? c - 1 : c;
		bool as_is = as_is_first ? c == 0 : c == conf->n_search;
		if (as_is)
			rt_strlcpy(candidate, name, sizeof(candidate));
		else
			rt_snprintf(candidate, sizeof(candidate), "%s.%s", name,
				    conf->search[search_index]);
		int r = query_name(conf, candidate, out, max, deadline_ns);
		if (r > 0) {
			result = r;
			break;
		}
		if (r == -ETIMEDOUT) {
			result = r;
			break;
		}
		if (r != -ENOENT)
			result = r;
	}
	rt_free(conf);
	return result;
}

static int literal_address(const char *host, uint16_t port, struct export_sockaddr *out)
{
	size_t n = rt_strlen(host);
	uint8_t ip[16];
	if (export_parse_ipv4(host, n, ip)) {
		export_sockaddr_ipv4(out, ip, port);
		return 1;
	}
	if (export_parse_ipv6(host, n, ip)) {
		export_sockaddr_ipv6(out, ip, port);
		return 1;
	}
	return 0;
}

int export_resolve(const char *host, uint16_t port, struct export_sockaddr *out, size_t max,
		   uint64_t deadline_ns)
{
	if (max == 0)
		return -EINVAL;
	if (literal_address(host, port, out))
		return 1;
	if (rt_eq_nocase(host, rt_strlen(host), "localhost")) {
		static const uint8_t v4[4] = {127, 0, 0, 1};
		export_sockaddr_ipv4(out, v4, port);
		if (max < 2)
			return 1;
		uint8_t v6[16] = {0};
		v6[15] = 1;
		export_sockaddr_ipv6(&out[1], v6, port);
		return 2;
	}
	struct export_dns_addr addrs[EXPORT_DNS_MAX_ADDRS];
	size_t cap = RT_MIN(max, RT_ARRAY_LEN(addrs));
	int found = dns_resolve(host, addrs, cap, deadline_ns);
	if (found < 0)
		return found;
	for (int i = 0; i < found; i++) {
		if (addrs[i].is_ipv6)
			export_sockaddr_ipv6(&out[i], addrs[i].ip, port);
		else
			export_sockaddr_ipv4(&out[i], addrs[i].ip, port);
	}
	return found;
}
