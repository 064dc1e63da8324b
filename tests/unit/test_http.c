/* The defensive HTTP response parser. */
#include <string.h>

#include "check.h"
#include "export/http.h"

static enum http_parse_result parse(const char *s, bool eof, struct http_response *r)
{
	return http_response_parse((const uint8_t *)s, strlen(s), eof, r);
}

static void test_content_length(void)
{
	struct http_response r;
	const char *ok = "HTTP/1.1 202 Accepted\r\nContent-Length: 5\r\n\r\nhello";
	CHECK(parse(ok, false, &r) == HTTP_PARSE_DONE);
	CHECK(r.status == 202 && strcmp(r.reason, "Accepted") == 0 && strcmp(r.body, "hello") == 0);
	/* Every strict prefix is incomplete, and an error at end of stream. */
	size_t n = strlen(ok);
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		if (http_response_parse((const uint8_t *)ok, i, false, &r) != HTTP_PARSE_INCOMPLETE)
			bad++;
		if (http_response_parse((const uint8_t *)ok, i, true, &r) != HTTP_PARSE_ERROR)
			bad++;
	}
	CHECK(bad == 0);
	CHECK(parse("HTTP/1.0 200 OK\nContent-Length: 0\n\n", false, &r) == HTTP_PARSE_DONE);
	CHECK(parse("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nContent-Length: 2\r\n\r\nok", false,
		    &r) == HTTP_PARSE_DONE);
	CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", false,
		    &r) == HTTP_PARSE_ERROR);
	CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, &r) ==
	      HTTP_PARSE_ERROR);
	CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999\r\n\r\n", false, &r) ==
	      HTTP_PARSE_ERROR);
	CHECK(parse("HTTP/1.1 403 Forbidden\r\nContent-Length: 3\r\n\r\nabcdef", false, &r) ==
	      HTTP_PARSE_DONE);
	CHECK(r.status == 403 && strcmp(r.body, "abc") == 0);
}

static void test_chunked(void)
{
	struct http_response r;
	const char *ok = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n";
	CHECK(parse(ok, false, &r) == HTTP_PARSE_DONE);
	CHECK(strcmp(r.body, "Wikipedia") == 0 && r.body_len == 9);
	size_t n = strlen(ok);
	int bad = 0;
	for (size_t i = 0; i < n; i++)
		if (http_response_parse((const uint8_t *)ok, i, false, &r) != HTTP_PARSE_INCOMPLETE)
			bad++;
	CHECK(bad == 0);
	/* Transfer-Encoding wins over Content-Length. */
	CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: gzip, chunked"
		    "\r\n\r\n0\r\n\r\n",
		    false, &r) == HTTP_PARSE_DONE);
	CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, &r) ==
	      HTTP_PARSE_ERROR);
	CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n123456789\r\n", false,
		    &r) == HTTP_PARSE_ERROR);
	CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", false, &r) ==
	      HTTP_PARSE_ERROR);
}

static void test_framing_variants(void)
{
	struct http_response r;
	/* No length: the body runs to the end of the stream. */
	CHECK(parse("HTTP/1.1 200 OK\r\n\r\nabc", false, &r) == HTTP_PARSE_INCOMPLETE);
	CHECK(parse("HTTP/1.1 200 OK\r\n\r\nabc", true, &r) == HTTP_PARSE_DONE);
	CHECK(strcmp(r.body, "abc") == 0);
	CHECK(parse("HTTP/1.1 204 No Content\r\n\r\n", false, &r) == HTTP_PARSE_DONE);
	/* Interim responses are skipped, a bounded number of them. */
	CHECK(parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		    false, &r) == HTTP_PARSE_DONE);
	CHECK(r.status == 200);
	char many[600] = "";
	for (int i = 0; i < 6; i++)
		strcat(many, "HTTP/1.1 100 Continue\r\n\r\n");
	strcat(many, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	CHECK(parse(many, false, &r) == HTTP_PARSE_ERROR);
	CHECK(parse("HTTP/1.1 101 Switching\r\n\r\n", false, &r) == HTTP_PARSE_ERROR);
}

static void test_malformed(void)
{
	struct http_response r;
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 Low\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n",
		"garbage",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum http_parse_result res = parse(bad[i], true, &r);
		if (res != HTTP_PARSE_ERROR)
			fprintf(stderr, "  accepted #%zu\n", i);
		CHECK(res == HTTP_PARSE_ERROR);
	}
	/* Oversized lines and too many headers are refused. */
	static char big[20000];
	strcpy(big, "HTTP/1.1 200 OK\r\nX: ");
	memset(big + strlen(big), 'a', 10000);
	CHECK(parse(big, false, &r) == HTTP_PARSE_ERROR);
	static char lots[8000];
	strcpy(lots, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 120; i++)
		strcat(lots, "X-A: b\r\n");
	strcat(lots, "\r\n");
	CHECK(parse(lots, true, &r) == HTTP_PARSE_ERROR);
	/* Reason phrases are sanitised and truncated. */
	CHECK(parse("HTTP/1.1 500 \x80\x90 very long reason phrase that goes on and on and on "
		    "beyond sixty-four bytes\r\nContent-Length: 0\r\n\r\n",
		    false, &r) == HTTP_PARSE_DONE);
	CHECK(r.status == 500 && strlen(r.reason) == sizeof(r.reason) - 1 && r.reason[0] == '?');
}

int main(void)
{
	RUN(test_content_length);
	RUN(test_chunked);
	RUN(test_framing_variants);
	RUN(test_malformed);
	return CHECK_DONE();
}
