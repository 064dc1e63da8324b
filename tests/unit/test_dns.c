/* Name resolution pieces: /etc/hosts, resolv.conf and DNS messages. */
#include <string.h>

#include "check.h"
#include "export/dns.h"

static void test_hosts(void)
{
	const char *hosts = "127.0.0.1\tlocalhost\n"
			    "# 10.0.0.1 commented\n"
			    "10.1.2.3 agent.local  Agent  # trailing comment\n"
			    "::1 ip6-localhost agent.local\n"
			    "bogus line here\n"
			    "10.9.9.9";
	struct export_dns_addr out[4];
	size_t n = export_hosts_lookup(hosts, strlen(hosts), "AGENT.local", out, 4);
	CHECK(n == 2);
	CHECK(!out[0].is_ipv6 && out[0].ip[0] == 10 && out[0].ip[3] == 3);
	CHECK(out[1].is_ipv6 && out[1].ip[15] == 1);
	CHECK(export_hosts_lookup(hosts, strlen(hosts), "agent", out, 4) == 1);
	CHECK(export_hosts_lookup(hosts, strlen(hosts), "commented", out, 4) == 0);
	CHECK(export_hosts_lookup(hosts, strlen(hosts), "agent.local", out, 1) == 1);
}

static void test_resolv_conf(void)
{
	const char *text = "# comment\nnameserver 10.96.0.10\nnameserver fe80::1%eth0\n"
			   "nameserver ::1\nnameserver 8.8.8.8\nnameserver 9.9.9.9\n"
			   "search default.svc.cluster.local svc.cluster.local cluster.local\n"
			   "options ndots:5 timeout:1\n";
	struct export_resolv_conf c;
	export_resolv_conf_parse(text, strlen(text), &c);
	CHECK(c.n_servers == 3); /* the zone-scoped one is skipped, at most 3 */
	CHECK(!c.servers[0].is_ipv6 && c.servers[0].ip[3] == 10);
	CHECK(c.servers[1].is_ipv6 && c.servers[1].ip[15] == 1);
	CHECK(c.n_search == 3 && strcmp(c.search[2], "cluster.local") == 0);
	CHECK(c.ndots == 5);
	export_resolv_conf_parse("", 0, &c);
	CHECK(c.n_servers == 1 && c.servers[0].ip[0] == 127 && c.ndots == 1 && c.n_search == 0);
	export_resolv_conf_parse("domain example.org\n", 19, &c);
	CHECK(c.n_search == 1 && strcmp(c.search[0], "example.org") == 0);
}

/* Appends an answer record with a compressed name pointing at the question. */
static size_t add_answer(uint8_t *msg, size_t len, uint16_t type, const uint8_t *rdata,
			 uint16_t rdlen)
{
	uint8_t rr[12] = {0xc0, 12, (uint8_t)(type >> 8), (uint8_t)type, 0, 1, 0, 0, 1, 0,
			  (uint8_t)(rdlen >> 8), (uint8_t)rdlen};
	memcpy(msg + len, rr, sizeof(rr));
	memcpy(msg + len + sizeof(rr), rdata, rdlen);
	msg[7]++; /* ANCOUNT low byte */
	return len + sizeof(rr) + rdlen;
}

static void test_dns_messages(void)
{
	uint8_t q[512];
	int qlen = export_dns_build_query(q, sizeof(q), 0x1234, "agent.example.com",
					  EXPORT_DNS_TYPE_A);
	CHECK(qlen == 12 + 19 + 4);
	CHECK(q[0] == 0x12 && q[1] == 0x34 && q[2] == 0x01 && q[5] == 1);
	CHECK(q[12] == 5 && memcmp(q + 13, "agent", 5) == 0 && q[30] == 0);
	uint8_t scratch[512];
	CHECK(export_dns_build_query(scratch, sizeof(scratch), 1, "bad..name", EXPORT_DNS_TYPE_A) < 0);
	CHECK(export_dns_build_query(scratch, sizeof(scratch), 1, "sp ace", EXPORT_DNS_TYPE_A) < 0);
	CHECK(export_dns_build_query(scratch, 20, 1, "agent.example.com", EXPORT_DNS_TYPE_A) < 0);
	char label64[80];
	memset(label64, 'a', 64);
	label64[64] = '\0';
	CHECK(export_dns_build_query(scratch, sizeof(scratch), 1, label64, EXPORT_DNS_TYPE_A) < 0);

	/* A response: the query echoed with QR set, a CNAME and two A records. */
	uint8_t msg[512];
	memcpy(msg, q, (size_t)qlen);
	msg[2] = 0x81;
	msg[3] = 0x80;
	size_t len = (size_t)qlen;
	static const uint8_t cname[] = {3, 'f', 'o', 'o', 0xc0, 12};
	len = add_answer(msg, len, 5, cname, sizeof(cname));
	static const uint8_t a1[] = {10, 0, 0, 1}, a2[] = {10, 0, 0, 2};
	len = add_answer(msg, len, EXPORT_DNS_TYPE_A, a1, 4);
	len = add_answer(msg, len, EXPORT_DNS_TYPE_A, a2, 4);
	struct export_dns_addr out[4];
	CHECK(export_dns_parse_response(msg, len, 0x1234, "AGENT.example.com.", EXPORT_DNS_TYPE_A,
					out, 4) == 2);
	CHECK(out[0].ip[3] == 1 && out[1].ip[3] == 2 && !out[0].is_ipv6);
	CHECK(export_dns_parse_response(msg, len, 0x1234, "agent.example.com", EXPORT_DNS_TYPE_A,
					out, 1) == 1);
	/* Wrong id, wrong name, wrong type, truncated: not our answer. */
	CHECK(export_dns_parse_response(msg, len, 0x1235, "agent.example.com", EXPORT_DNS_TYPE_A,
					out, 4) == -1);
	CHECK(export_dns_parse_response(msg, len, 0x1234, "other.example.com", EXPORT_DNS_TYPE_A,
					out, 4) == -1);
	CHECK(export_dns_parse_response(msg, len, 0x1234, "agent.example.com",
					EXPORT_DNS_TYPE_AAAA, out, 4) == -1);
	int bad = 0;
	for (size_t cut = 0; cut < len; cut++)
		if (export_dns_parse_response(msg, cut, 0x1234, "agent.example.com",
					      EXPORT_DNS_TYPE_A, out, 4) != -1)
			bad++;
	CHECK(bad == 0);
	/* The query itself (QR clear) is not an answer. */
	CHECK(export_dns_parse_response(q, (size_t)qlen, 0x1234, "agent.example.com",
					EXPORT_DNS_TYPE_A, out, 4) == -1);
	/* NXDOMAIN. */
	memcpy(msg, q, (size_t)qlen);
	msg[2] = 0x81;
	msg[3] = 0x83;
	CHECK(export_dns_parse_response(msg, (size_t)qlen, 0x1234, "agent.example.com",
					EXPORT_DNS_TYPE_A, out, 4) == -2);
	/* AAAA with a wrong rdata length is skipped. */
	qlen = export_dns_build_query(q, sizeof(q), 7, "h", EXPORT_DNS_TYPE_AAAA);
	memcpy(msg, q, (size_t)qlen);
	msg[2] = 0x81;
	msg[3] = 0x80;
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 9};
	len = add_answer(msg, (size_t)qlen, EXPORT_DNS_TYPE_AAAA, v6, 4);
	len = add_answer(msg, len, EXPORT_DNS_TYPE_AAAA, v6, 16);
	CHECK(export_dns_parse_response(msg, len, 7, "h", EXPORT_DNS_TYPE_AAAA, out, 4) == 1);
	CHECK(out[0].is_ipv6 && out[0].ip[0] == 0x20 && out[0].ip[15] == 9);
}

int main(void)
{
	RUN(test_hosts);
	RUN(test_resolv_conf);
	RUN(test_dns_messages);
	return CHECK_DONE();
}
