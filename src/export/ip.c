/* IP literal parsing; see ip.h. */
#include "export/ip.h"

#include "rt/rt.h"

bool export_parse_ipv4(const char *s, size_t n, uint8_t out[4])
{
	uint8_t bytes[4];
	size_t part = 0, i = 0;
	while (part < 4) {
		size_t start = i;
		unsigned v = 0;
		while (i < n && s[i] >= '0' && s[i] <= '9' && i - start < 3) {
			v = v * 10 + (unsigned)(s[i] - '0');
			i++;
		}
		size_t digits = i - start;
		/* No empty parts, no leading zeros (they mean octal elsewhere). */
		if (digits == 0 || v > 255 || (digits > 1 && s[start] == '0'))
			return false;
		bytes[part++] = (uint8_t)v;
		if (part < 4) {
			if (i >= n || s[i] != '.')
				return false;
			i++;
		}
	}
	if (i != n)
		return false;
	rt_memcpy(out, bytes, 4);
	return true;
}

bool export_parse_ipv6(const char *s, size_t n, uint8_t out[16])
{
	uint8_t bytes[16];
	size_t nbytes = 0;
	long gap = -1; /* byte index where "::" was seen */
	size_t i = 0;

	if (n >= 2 && s[0] == ':' && s[1] == ':') {
		gap = 0;
		i = 2;
	} else if (n >= 1 && s[0] == ':') {
		return false;
	}
	while (i < n) {
		if (nbytes >= 16)
			return false;
		/* A dotted quad may end the address. */
		size_t j = i;
		while (j < n && s[j] != ':' && s[j] != '.')
			j++;
		if (j < n && s[j] == '.') {
			if (nbytes > 12 || !export_parse_ipv4(s + i, n - i, bytes + nbytes))
				return false;
			nbytes += 4;
			break;
		}
		unsigned v = 0;
		size_t start = i;
		while (i < n && i - start < 4 && rt_hex_digit((unsigned char)s[i]) >= 0) {
			v = v * 16 + (unsigned)rt_hex_digit((unsigned char)s[i]);
			i++;
		}
		if (i == start)
			return false;
		bytes[nbytes++] = (uint8_t)(v >> 8);
		bytes[nbytes++] = (uint8_t)v;
		if (i == n)
			break;
		if (s[i] != ':')
			return false;
		i++;
		if (i < n && s[i] == ':') {
			if (gap >= 0)
				return false;
			gap = (long)nbytes;
			i++;
		} else if (i == n) {
			return false; /* trailing single ':' */
		}
	}
	if (gap < 0) {
		if (nbytes != 16)
			return false;
		rt_memcpy(out, bytes, 16);
		return true;
	}
	if (nbytes > 14)
		return false; /* "::" must stand for at least one group */
	size_t tail = nbytes - (size_t)gap;
	rt_memset(out, 0, 16);
	rt_memcpy(out, bytes, (size_t)gap);
	rt_memcpy(out + 16 - tail, bytes + gap, tail);
	return true;
}
