/* Wire encodings for the exporters; see text.h. */
#include "export/text.h"

void export_civil_from_unix(int64_t unix_s, struct export_civil_time *out)
{
	/* Split into whole days and the second of the day, rounding down. */
	int64_t days = unix_s / 86400;
	int64_t sod = unix_s % 86400;
	if (sod < 0) {
		sod += 86400;
		days -= 1;
	}
	out->hour = (unsigned)(sod / 3600);
	out->minute = (unsigned)(sod / 60 % 60);
	out->second = (unsigned)(sod % 60);
	/* 1970-01-01 was a Thursday. */
	int64_t wd = (days + 4) % 7;
	out->weekday = (unsigned)(wd < 0 ? wd + 7 : wd);

	/* Count in 400-year eras starting on 0000-03-01, so that the leap day
	 * is the last day of each computed year. */
	int64_t z = days + 719468; /* days from 0000-03-01 to 1970-01-01 */
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;                                 /* 0..146096 */
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* 0..399 */
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);          /* 0..365, from March */
	int64_t mp = (5 * doy + 2) / 153;                              /* 0 = March */
	unsigned day = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	unsigned month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
	out->year = year;
	out->month = month;
	out->day = day;

	static const unsigned short cumulative[12] = {0,   31,  59,  90,  120, 151,
						      181, 212, 243, 273, 304, 334};
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	out->yearday = cumulative[month - 1] + day - 1 + ((leap && month > 2) ? 1 : 0);
}

void export_append_rfc3339_ns(struct rt_buf *b, uint64_t realtime_ns)
{
	struct export_civil_time t;
	export_civil_from_unix((int64_t)(realtime_ns / RT_NS_PER_SEC), &t);
	rt_buf_appendf(b, "%04lld-%02u-%02uT%02u:%02u:%02u.%09uZ", (long long)t.year, t.month,
		       t.day, t.hour, t.minute, t.second,
		       (unsigned)(realtime_ns % RT_NS_PER_SEC));
}

static const char hex_digits[] = "0123456789abcdef";

void export_append_json_escaped(struct rt_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			rt_buf_append_byte(b, '\\');
			rt_buf_append_byte(b, c);
		} else if (c == '\n') {
			rt_buf_append(b, "\\n", 2);
		} else if (c == '\r') {
			rt_buf_append(b, "\\r", 2);
		} else if (c == '\t') {
			rt_buf_append(b, "\\t", 2);
		} else if (c < 0x20 || c == 0x7f) {
			char esc[6] = {'\\', 'u', '0', '0', hex_digits[c >> 4], hex_digits[c & 15]};
			rt_buf_append(b, esc, sizeof(esc));
		} else {
			rt_buf_append_byte(b, c);
		}
	}
}

static bool is_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

void export_append_url_encoded(struct rt_buf *b, const char *s, size_t n)
{
	static const char upper_hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (is_unreserved(c)) {
			rt_buf_append_byte(b, c);
		} else {
			char esc[3] = {'%', upper_hex[c >> 4], upper_hex[c & 15]};
			rt_buf_append(b, esc, sizeof(esc));
		}
	}
}

void export_append_base64(struct rt_buf *b, const uint8_t *p, size_t n)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		char out[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63],
			       alphabet[v & 63]};
		rt_buf_append(b, out, sizeof(out));
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)p[i] << 16;
		char out[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], '=', '='};
		rt_buf_append(b, out, sizeof(out));
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
		char out[4] = {alphabet[v >> 18], alphabet[(v >> 12) & 63], alphabet[(v >> 6) & 63],
			       '='};
		rt_buf_append(b, out, sizeof(out));
	}
}

void export_form_part(struct rt_buf *b, const char *boundary, const char *name,
		      const char *filename, const char *content_type)
{
	rt_buf_appendf(b,
		       "--%s\r\nContent-Disposition: form-data; name=\"%s\"; filename=\"%s\"\r\n"
		       "Content-Type: %s\r\n\r\n",
		       boundary, name, filename, content_type);
}

void export_form_end(struct rt_buf *b, const char *boundary)
{
	rt_buf_appendf(b, "\r\n--%s--\r\n", boundary);
}

bool export_header_safe(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

void export_make_boundary(char *out, size_t cap, uint64_t fallback)
{
	uint8_t random[16];
	if (!rt_random_bytes(random, sizeof(random))) {
		rt_memset(random, 0, sizeof(random));
		rt_memcpy(random, &fallback, sizeof(fallback));
	}
	size_t bl = rt_strlcpy(out, "stowaway", cap);
	for (size_t i = 0; i < sizeof(random) && bl + 2 < cap; i++)
		bl += (size_t)rt_snprintf(out + bl, cap - bl, "%02x", random[i]);
}
