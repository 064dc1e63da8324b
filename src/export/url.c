/* URL parsing; see url.h. */
#include "export/url.h"

#include "rt/rt.h"

static bool is_host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_';
}

static bool is_path_char(char c)
{
	/* Printable ASCII except space, '#' (fragment) and '"'/'<'/'>'/'\\'. */
	return c > 0x20 && c < 0x7f && c != '#' && c != '"' && c != '<' && c != '>' && c != '\\';
}

static bool copy_bounded(char *dst, size_t cap, const char *src, size_t n)
{
	if (n >= cap)
		return false;
	rt_memcpy(dst, src, n);
	dst[n] = '\0';
	return true;
}

static bool parse_authority(const char *s, size_t n, struct export_url *out)
{
	size_t host_start = 0, host_end, after_host;
	if (n == 0)
		return false;
	if (s[0] == '[') {
		const char *close = rt_memchr(s, ']', n);
		if (!close)
			return false;
		host_start = 1;
		host_end = (size_t)(close - s);
		after_host = host_end + 1;
		uint8_t ip6[16];
		if (!export_parse_ipv6(s + 1, host_end - 1, ip6))
			return false;
		out->host_is_ipv6 = true;
	} else {
		host_end = 0;
		while (host_end < n && s[host_end] != ':')
			host_end++;
		after_host = host_end;
		for (size_t i = 0; i < host_end; i++)
			if (!is_host_char(s[i]))
				return false;
	}
	if (host_end == host_start)
		return false;
	if (!copy_bounded(out->host, sizeof(out->host), s + host_start, host_end - host_start))
		return false;
	if (after_host == n)
		return true;
	if (s[after_host] != ':')
		return false;
	uint64_t port;
	size_t digits = n - after_host - 1;
	if (digits == 0 || digits > 5 || !rt_parse_u64(s + after_host + 1, digits, &port) ||
	    port == 0 || port > 65535)
		return false;
	out->port = (uint16_t)port;
	return true;
}

bool export_url_parse(const char *s, size_t n, struct export_url *out)
{
	static const struct {
		const char *prefix;
		enum export_url_scheme scheme;
		uint16_t port;
	} schemes[] = {
		{"http://", EXPORT_URL_HTTP, 80},
		{"https://", EXPORT_URL_HTTPS, 443},
		{"unix://", EXPORT_URL_UNIX, 0},
	};
	rt_memset(out, 0, sizeof(*out));
	size_t rest = 0;
	bool known = false;
	for (size_t k = 0; k < RT_ARRAY_LEN(schemes) && !known; k++) {
		size_t plen = rt_strlen(schemes[k].prefix);
		if (n >= plen && rt_eq_nocase(s, plen, schemes[k].prefix)) {
			out->scheme = schemes[k].scheme;
			out->port = schemes[k].port;
			rest = plen;
			known = true;
		}
	}
	if (!known)
		return false;
	for (size_t i = rest; i < n; i++)
		if (!is_path_char(s[i]))
			return false;

	if (out->scheme == EXPORT_URL_UNIX) {
		/* unix:///abs/path: empty authority, absolute path. */
		if (rest >= n || s[rest] != '/' || n - rest < 2)
			return false;
		return copy_bounded(out->path, sizeof(out->path), s + rest, n - rest);
	}
	const char *auth = s + rest;
	size_t auth_len = 0;
	while (rest + auth_len < n && auth[auth_len] != '/' && auth[auth_len] != '?')
		auth_len++;
	if (rt_memchr(auth, '@', auth_len))
		return false; /* credentials never belong in these URLs */
	if (!parse_authority(auth, auth_len, out))
		return false;
	return copy_bounded(out->path, sizeof(out->path), auth + auth_len, n - rest - auth_len);
}
