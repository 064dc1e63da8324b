/* A small HTTP/1.1 client for the exporters: one request per connection
 * (Connection: close), over TCP, a unix socket or TLS, every step bounded
 * by a deadline, and a defensive response parser. */
#ifndef STOWAWAY_EXPORT_HTTP_H
#define STOWAWAY_EXPORT_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/url.h"

struct export_tls_config;

/* Limits of what we accept from a server. */
#define HTTP_MAX_RESPONSE (64 * 1024) /* bytes buffered per response */
#define HTTP_MAX_HEADER_LINES 100
#define HTTP_MAX_INTERIM 4            /* 1xx responses skipped */

struct http_response {
	int status;           /* 100..999, 0 until parsed */
	char reason[64];      /* reason phrase, truncated, printable ASCII */
	bool headers_complete;
	bool body_truncated;  /* the body did not fit HTTP_MAX_RESPONSE */
	size_t body_len;      /* decoded body bytes seen */
	char body[256];       /* first bytes of the decoded body, terminated */
};

enum http_parse_result {
	HTTP_PARSE_ERROR = -1,
	HTTP_PARSE_INCOMPLETE = 0,
	HTTP_PARSE_DONE = 1,
};

/* Parses buf[0..n) as one complete response.  eof says the peer closed the
 * stream after these bytes.  Handles interim 1xx responses,
 * Content-Length, chunked transfer coding and bodies delimited by the end of
 * the stream; rejects malformed or oversized framing.  Pure: re-run it on
 * the whole buffer as more bytes arrive. */
enum http_parse_result http_response_parse(const uint8_t *buf, size_t n, bool eof,
					   struct http_response *out);

/* A piece of the request body, sent in order without copying. */
struct http_segment {
	const void *data;
	size_t len;
};

struct http_request {
	const struct export_url *url;     /* where to connect */
	struct export_tls_config *tls;    /* required for https URLs */
	const char *target;               /* request target, e.g. "/profiling/v1/input" */
	const char *headers;              /* extra "Name: value\r\n" lines */
	const struct http_segment *body;
	size_t n_body;
	uint64_t connect_deadline_ns;     /* CLOCK_MONOTONIC */
	uint64_t deadline_ns;             /* whole exchange, >= connect deadline */
};

/* Sends one POST and reads the response.  0 when a response was parsed
 * (whatever its status) or -errno for a network or protocol failure
 * (-ETIMEDOUT, -ECONNREFUSED, -EPROTO for a malformed response, ...). */
int http_post(const struct http_request *req, struct http_response *resp);

#endif
