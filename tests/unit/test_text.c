/* The exporters' text encoders and civil time (export/text.c). */
#include <string.h>

#include "check.h"
#include "export/text.h"

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

/* The multipart framing both form exporters send, byte for byte. */
static void test_form_parts_and_header_values(void)
{
	struct rt_buf b = {0};
	export_form_part(&b, "B", "event", "event.json", "application/json");
	rt_buf_append_str(&b, "{}\r\n");
	export_form_part(&b, "B", "profile.pprof", "profile.pprof", "application/octet-stream");
	rt_buf_append_str(&b, "x");
	export_form_end(&b, "B");
	const char *want = "--B\r\nContent-Disposition: form-data; name=\"event\"; filename=\"event.json\"\r\n"
			   "Content-Type: application/json\r\n\r\n{}\r\n"
			   "--B\r\nContent-Disposition: form-data; name=\"profile.pprof\"; "
			   "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n"
			   "x\r\n--B--\r\n";
	CHECK(!b.failed && b.len == strlen(want) && memcmp(b.data, want, b.len) == 0);
	rt_buf_free(&b);
	CHECK(export_header_safe("key-123 with spaces"));
	CHECK(export_header_safe(""));
	CHECK(!export_header_safe("a\r\nX-Injected: 1"));
	CHECK(!export_header_safe("tab\there"));
	CHECK(!export_header_safe("del\x7f"));
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
	RUN(test_encoders);
	RUN(test_form_parts_and_header_values);
	RUN(test_civil_time);
	return CHECK_DONE();
}
