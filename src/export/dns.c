/* Parsers of /etc/hosts, resolv.conf and DNS messages; see dns.h. */
#include "export/dns.h"

#include "export/ip.h"
#include "rt/rt.h"

#define DNS_HEADER_LEN 12
#define DNS_CLASS_IN 1
#define DNS_FLAG_QR 0x8000u
#define DNS_FLAG_TC 0x0200u
#define DNS_FLAG_RD 0x0100u
#define DNS_RCODE_NXDOMAIN 3

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Next whitespace-separated token of line[*pos..n); false at the end. */
static bool next_token(const char *line, size_t n, size_t *pos, const char **tok, size_t *tok_len)
{
	size_t i = *pos;
	while (i < n && is_blank(line[i]))
		i++;
	if (i >= n)
		return false;
	size_t start = i;
	while (i < n && !is_blank(line[i]))
		i++;
	*tok = line + start;
	*tok_len = i - start;
	*pos = i;
	return true;
}

static bool parse_ip(const char *s, size_t n, struct export_dns_addr *out)
{
	rt_memset(out, 0, sizeof(*out));
	if (export_parse_ipv4(s, n, out->ip))
		return true;
	if (export_parse_ipv6(s, n, out->ip)) {
		out->is_ipv6 = true;
		return true;
	}
	return false;
}

/* Length of the current line (without '#' comment) and where the next starts. */
static size_t line_extent(const char *text, size_t n, size_t start, size_t *next)
{
	const char *nl = rt_memchr(text + start, '\n', n - start);
	size_t end = nl ? (size_t)(nl - text) : n;
	*next = nl ? end + 1 : n;
	const char *hash = rt_memchr(text + start, '#', end - start);
	if (hash)
		end = (size_t)(hash - text);
	return end - start;
}

size_t export_hosts_lookup(const char *text, size_t n, const char *name,
			   struct export_dns_addr *out, size_t max)
{
	size_t found = 0;
	size_t name_len = rt_strlen(name);
	size_t pos = 0;
	while (pos < n && found < max) {
		size_t next;
		const char *line = text + pos;
		size_t len = line_extent(text, n, pos, &next);
		pos = next;
		size_t at = 0;
		const char *tok;
		size_t tok_len;
		struct export_dns_addr addr;
		if (!next_token(line, len, &at, &tok, &tok_len) || !parse_ip(tok, tok_len, &addr))
			continue;
		while (next_token(line, len, &at, &tok, &tok_len)) {
			if (tok_len == name_len && rt_eq_nocase(tok, tok_len, name)) {
				out[found++] = addr;
				break;
			}
		}
	}
	return found;
}

void export_resolv_conf_parse(const char *text, size_t n, struct export_resolv_conf *out)
{
	rt_memset(out, 0, sizeof(*out));
	out->ndots = 1;
	size_t pos = 0;
	while (pos < n) {
		size_t next;
		const char *line = text + pos;
		size_t len = line_extent(text, n, pos, &next);
		pos = next;
		const char *semi = rt_memchr(line, ';', len);
		if (semi)
			len = (size_t)(semi - line);
		size_t at = 0;
		const char *key, *tok;
		size_t key_len, tok_len;
		if (!next_token(line, len, &at, &key, &key_len))
			continue;
		if (key_len == 10 && rt_memcmp(key, "nameserver", 10) == 0) {
			if (out->n_servers < EXPORT_DNS_MAX_SERVERS &&
			    next_token(line, len, &at, &tok, &tok_len) &&
			    parse_ip(tok, tok_len, &out->servers[out->n_servers]))
				out->n_servers++;
		} else if ((key_len == 6 && rt_memcmp(key, "search", 6) == 0) ||
			   (key_len == 6 && rt_memcmp(key, "domain", 6) == 0)) {
			out->n_search = 0; /* the last search/domain line wins */
			while (out->n_search < EXPORT_DNS_MAX_SEARCH &&
			       next_token(line, len, &at, &tok, &tok_len)) {
				if (tok_len < EXPORT_DNS_NAME_MAX && !(tok_len == 1 && tok[0] == '.')) {
					rt_memcpy(out->search[out->n_search], tok, tok_len);
					out->search[out->n_search][tok_len] = '\0';
					out->n_search++;
				}
			}
		} else if (key_len == 7 && rt_memcmp(key, "options", 7) == 0) {
			while (next_token(line, len, &at, &tok, &tok_len)) {
				uint64_t v;
				if (tok_len > 6 && rt_memcmp(tok, "ndots:", 6) == 0 &&
				    rt_parse_u64(tok + 6, tok_len - 6, &v))
					out->ndots = (unsigned)RT_MIN(v, 15u);
			}
		}
	}
	if (out->n_servers == 0) {
		static const uint8_t loopback[4] = {127, 0, 0, 1};
		rt_memcpy(out->servers[0].ip, loopback, 4);
		out->n_servers = 1;
	}
}

/* Encodes a dotted name as DNS labels; returns the length or -1. */
static int encode_name(uint8_t *buf, size_t cap, const char *name)
{
	size_t n = rt_strlen(name);
	if (n > 0 && name[n - 1] == '.')
		n--;
	if (n == 0 || n > 253 || cap < n + 2)
		return -1;
	size_t out = 0, start = 0;
	while (start <= n) {
		size_t end = start;
		while (end < n && name[end] != '.')
			end++;
		size_t label = end - start;
		if (label == 0 || label > 63)
			return -1;
		buf[out++] = (uint8_t)label;
		for (size_t i = start; i < end; i++) {
			char c = name[i];
			bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				  (c >= '0' && c <= '9') || c == '-' || c == '_';
			if (!ok)
				return -1;
			buf[out++] = (uint8_t)c;
		}
		start = end + 1;
	}
	buf[out++] = 0;
	return (int)out;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

int export_dns_build_query(uint8_t *buf, size_t cap, uint16_t id, const char *name,
			   uint16_t qtype)
{
	if (cap < DNS_HEADER_LEN + 4)
		return -1;
	rt_memset(buf, 0, DNS_HEADER_LEN);
	put16(buf, id);
	put16(buf + 2, DNS_FLAG_RD);
	put16(buf + 4, 1); /* one question */
	int qname = encode_name(buf + DNS_HEADER_LEN, cap - DNS_HEADER_LEN - 4, name);
	if (qname < 0)
		return -1;
	size_t off = DNS_HEADER_LEN + (size_t)qname;
	put16(buf + off, qtype);
	put16(buf + off + 2, DNS_CLASS_IN);
	return (int)(off + 4);
}

static uint8_t ascii_lower(uint8_t c) { return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + 32) : c; }

/* Skips a possibly compressed name at msg[*off]; false if malformed. */
static bool skip_name(const uint8_t *msg, size_t n, size_t *off)
{
	size_t i = *off;
	for (int labels = 0; labels < 128; labels++) {
		if (i >= n)
			return false;
		uint8_t len = msg[i];
		if ((len & 0xc0) == 0xc0) {
			if (i + 2 > n)
				return false;
			*off = i + 2;
			return true;
		}
		if (len & 0xc0)
			return false;
		if (len == 0) {
			*off = i + 1;
			return true;
		}
		i += 1u + len;
	}
	return false;
}

int export_dns_parse_response(const uint8_t *msg, size_t n, uint16_t id, const char *name,
			      uint16_t qtype, struct export_dns_addr *out, size_t max)
{
	uint8_t qname[EXPORT_DNS_NAME_MAX + 2];
	int qname_len = encode_name(qname, sizeof(qname), name);
	if (qname_len < 0 || n < DNS_HEADER_LEN)
		return -1;
	uint16_t flags = get16(msg + 2);
	if (get16(msg) != id || !(flags & DNS_FLAG_QR) || (flags & 0x7800u) != 0 ||
	    (flags & DNS_FLAG_TC))
		return -1;
	unsigned rcode = flags & 0xfu;
	if (get16(msg + 4) != 1)
		return -1;
	/* The question must be ours, uncompressed, byte for byte (any case). */
	size_t off = DNS_HEADER_LEN;
	if (n < off + (size_t)qname_len + 4)
		return -1;
	for (int i = 0; i < qname_len; i++)
		if (ascii_lower(msg[off + (size_t)i]) != ascii_lower(qname[i]))
			return -1;
	off += (size_t)qname_len;
	if (get16(msg + off) != qtype || get16(msg + off + 2) != DNS_CLASS_IN)
		return -1;
	off += 4;
	if (rcode == DNS_RCODE_NXDOMAIN)
		return -2;
	if (rcode != 0)
		return -1;

	unsigned answers = get16(msg + 6);
	size_t found = 0;
	for (unsigned a = 0; a < answers; a++) {
		if (!skip_name(msg, n, &off) || off + 10 > n)
			return -1;
		uint16_t type = get16(msg + off);
		uint16_t klass = get16(msg + off + 2);
		size_t rdlen = get16(msg + off + 8);
		off += 10;
		if (off + rdlen > n)
			return -1;
		size_t want = qtype == EXPORT_DNS_TYPE_A ? 4 : 16;
		if (type == qtype && klass == DNS_CLASS_IN && rdlen == want && found < max) {
			rt_memset(&out[found], 0, sizeof(out[found]));
			out[found].is_ipv6 = qtype == EXPORT_DNS_TYPE_AAAA;
			rt_memcpy(out[found].ip, msg + off, want);
			found++;
		}
		off += rdlen;
	}
	return (int)found;
}
