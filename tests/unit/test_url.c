/* URL and IP literal parsing, and the text encoders of the exporters. */
#include <string.h>

#include "check.h"
#include "export/text.h"
#include "export/url.h"

static bool parse(const char *s, struct export_url *u) { return export_url_parse(s, strlen(s), u); }

static void test_http_urls(void)
{
	struct export_url u;
	CHECK(parse("http://localhost:8126", &u));
	CHECK(u.scheme == EXPORT_URL_HTTP && strcmp(u.host, "localhost") == 0 && u.port == 8126);
	CHECK(strcmp(u.path, "") == 0 && !u.host_is_ipv6);
	CHECK(parse("HTTPS://intake.profile.datadoghq.eu/api/v2/profile", &u));
	CHECK(u.scheme == EXPORT_URL_HTTPS && u.port == 443);
	CHECK(strcmp(u.host, "intake.profile.datadoghq.eu") == 0);
	CHECK(strcmp(u.path, "/api/v2/profile") == 0);
	CHECK(parse("http://10.0.0.7", &u) && u.port == 80 && strcmp(u.host, "10.0.0.7") == 0);
	CHECK(parse("http://[::1]:4040/p?x=1", &u));
	CHECK(u.host_is_ipv6 && strcmp(u.host, "::1") == 0 && u.port == 4040);
	CHECK(strcmp(u.path, "/p?x=1") == 0);
	CHECK(parse("http://host?q", &u) && strcmp(u.path, "?q") == 0);
}

static void test_unix_urls(void)
{
	struct export_url u;
	CHECK(parse("unix:///var/run/datadog/apm.socket", &u));
	CHECK(u.scheme == EXPORT_URL_UNIX && strcmp(u.path, "/var/run/datadog/apm.socket") == 0);
	CHECK(u.host[0] == '\0' && u.port == 0);
	CHECK(!parse("unix://", &u));
	CHECK(!parse("unix:///", &u));
	CHECK(!parse("unix://relative/path", &u));
}

static void test_bad_urls(void)
{
	struct export_url u;
	static const char *const bad[] = {
		"", "localhost:8126", "ftp://x", "http://", "http://:80", "http://h:0",
		"http://h:65536", "http://h:12a", "http://h:", "http://user:pw@h/", "http://h/a b",
		"http://h/#frag", "http://[::1", "http://[zz]/", "http://h\r\nX: y", "http://h_%/",
		"http://[1.2.3.4]/", "http://h:123456",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool ok = parse(bad[i], &u);
		if (ok)
			fprintf(stderr, "  accepted %s\n", bad[i]);
		CHECK(!ok);
	}
	char long_host[400];
	memset(long_host, 'a', sizeof(long_host));
	memcpy(long_host, "http://", 7);
	long_host[sizeof(long_host) - 1] = '\0';
	CHECK(!parse(long_host, &u));
}

static void test_ipv4(void)
{
	uint8_t ip[4];
	CHECK(export_parse_ipv4("127.0.0.1", 9, ip) && ip[0] == 127 && ip[3] == 1);
	CHECK(export_parse_ipv4("255.255.255.255", 15, ip) && ip[2] == 255);
	CHECK(!export_parse_ipv4("256.0.0.1", 9, ip));
	CHECK(!export_parse_ipv4("1.2.3", 5, ip));
	CHECK(!export_parse_ipv4("1.2.3.4.5", 9, ip));
	CHECK(!export_parse_ipv4("01.2.3.4", 8, ip));
	CHECK(!export_parse_ipv4("1..3.4", 6, ip));
	CHECK(!export_parse_ipv4("1.2.3.4 ", 8, ip));
}

static void test_ipv6(void)
{
	uint8_t ip[16];
	static const uint8_t loop[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	CHECK(export_parse_ipv6("::1", 3, ip) && memcmp(ip, loop, 16) == 0);
	CHECK(export_parse_ipv6("::", 2, ip) && ip[0] == 0 && ip[15] == 0);
	CHECK(export_parse_ipv6("fe80::1:2", 9, ip) && ip[0] == 0xfe && ip[1] == 0x80 &&
	      ip[13] == 1 && ip[15] == 2);
	CHECK(export_parse_ipv6("1:2:3:4:5:6:7:8", 15, ip) && ip[1] == 1 && ip[15] == 8);
	CHECK(export_parse_ipv6("::ffff:192.0.2.1", 16, ip) && ip[10] == 0xff && ip[12] == 192 &&
	      ip[15] == 1);
	CHECK(export_parse_ipv6("1::", 3, ip) && ip[1] == 1 && ip[15] == 0);
	CHECK(!export_parse_ipv6("1:2:3:4:5:6:7:8:9", 17, ip));
	CHECK(!export_parse_ipv6("1::2::3", 7, ip));
	CHECK(!export_parse_ipv6(":1", 2, ip));
	CHECK(!export_parse_ipv6("1:", 2, ip));
	CHECK(!export_parse_ipv6("12345::", 7, ip));
	CHECK(!export_parse_ipv6("1:2:3:4:5:6:7:8::", 18, ip));
	CHECK(!export_parse_ipv6("g::", 3, ip));
}

static void test_encoders(void)
{
	struct rt_buf b = {0};
	export_append_json_escaped(&b, "a\"b\\c\n\x01\x7f\xc3\xa9", 10);
	rt_buf_append_byte(&b, 0);
	CHECK(strcmp((char *)b.data, "a\\\"b\\\\c\\n\\u0001\\u007f\xc3\xa9") == 0);
	rt_buf_reset(&b);
	export_append_url_encoded(&b, "svc{env=prod, x}/~", 18);
	rt_buf_append_byte(&b, 0);
	CHECK(strcmp((char *)b.data, "svc%7Benv%3Dprod%2C%20x%7D%2F~") == 0);
	rt_buf_reset(&b);
	export_append_base64(&b, (const uint8_t *)"user:pass", 9);
	export_append_base64(&b, (const uint8_t *)"a", 1);
	export_append_base64(&b, (const uint8_t *)"ab", 2);
	rt_buf_append_byte(&b, 0);
	CHECK(strcmp((char *)b.data, "dXNlcjpwYXNzYQ==YWI=") == 0);
	rt_buf_free(&b);
}

static void test_civil_time(void)
{
	struct export_civil_time t;
	export_civil_from_unix(0, &t);
	CHECK(t.year == 1970 && t.month == 1 && t.day == 1 && t.weekday == 4 && t.yearday == 0);
	export_civil_from_unix(951782400, &t); /* 2000-02-29 00:00:00 */
	CHECK(t.year == 2000 && t.month == 2 && t.day == 29 && t.weekday == 2 && t.yearday == 59);
	export_civil_from_unix(1767225599, &t); /* 2025-12-31 23:59:59 */
	CHECK(t.year == 2025 && t.month == 12 && t.day == 31 && t.hour == 23 && t.minute == 59 &&
	      t.second == 59 && t.yearday == 364);
	export_civil_from_unix(-1, &t); /* 1969-12-31 23:59:59, a Wednesday */
	CHECK(t.year == 1969 && t.month == 12 && t.day == 31 && t.second == 59 && t.weekday == 3);
	export_civil_from_unix(4102444800, &t); /* 2100-01-01, not a leap year */
	CHECK(t.year == 2100 && t.month == 1 && t.day == 1);
	export_civil_from_unix(4107542400, &t); /* 2100-03-01 (no Feb 29) */
	CHECK(t.month == 3 && t.day == 1 && t.yearday == 59);
	/* Every day for 800 years against a day counter. */
	int64_t days = -146097; /* 1570-03-01 .. */
	struct export_civil_time prev;
	export_civil_from_unix(days * 86400, &prev);
	int bad = 0;
	for (int i = 1; i < 2 * 146097; i++) {
		export_civil_from_unix((days + i) * 86400, &t);
		bool next_day = t.day == prev.day + 1 && t.month == prev.month && t.year == prev.year;
		bool next_month = t.day == 1 && ((t.month == prev.month + 1 && t.year == prev.year) ||
						 (t.month == 1 && prev.month == 12 &&
						  t.year == prev.year + 1));
		if (!(next_day || next_month) || t.weekday != (prev.weekday + 1) % 7)
			bad++;
		prev = t;
	}
	CHECK(bad == 0);
	struct rt_buf b = {0};
	export_append_rfc3339_ns(&b, 1767225599123456789ull);
	rt_buf_append_byte(&b, 0);
	CHECK(strcmp((char *)b.data, "2025-12-31T23:59:59.123456789Z") == 0);
	rt_buf_free(&b);
}

int main(void)
{
	RUN(test_http_urls);
	RUN(test_unix_urls);
	RUN(test_bad_urls);
	RUN(test_ipv4);
	RUN(test_ipv6);
	RUN(test_encoders);
	RUN(test_civil_time);
	return CHECK_DONE();
}
