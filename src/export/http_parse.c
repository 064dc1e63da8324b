/* Defensive HTTP/1.1 response parser; see http.h. */
#include "export/http.h"

#include "rt/rt.h"

#define MAX_LINE 8192
#define MAX_CONTENT_LENGTH ((uint64_t)1 << 40)
#define MAX_CHUNK_DIGITS 8

/* Finds the end of the line starting at *pos: sets *len (without CR LF)
 * and advances *pos past the LF.  INCOMPLETE without a LF yet, ERROR for
 * overlong lines. */
static enum http_parse_result take_line(const uint8_t *buf, size_t n, size_t *pos,
					const uint8_t **line, size_t *len)
{
	size_t avail = n - *pos;
	size_t scan = RT_MIN(avail, (size_t)MAX_LINE + 2);
	const uint8_t *nl = rt_memchr(buf + *pos, '\n', scan);
	if (!nl)
		return avail > MAX_LINE ? HTTP_PARSE_ERROR : HTTP_PARSE_INCOMPLETE;
	*line = buf + *pos;
	*len = (size_t)(nl - *line);
	if (*len > 0 && (*line)[*len - 1] == '\r')
		(*len)--;
	*pos = (size_t)(nl - buf) + 1;
	return HTTP_PARSE_DONE;
}

static bool is_token_char(uint8_t c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return rt_memchr("!#$%&'*+-.^_`|~", c, 15) != NULL;
}

static void trim(const uint8_t **s, size_t *n)
{
	while (*n > 0 && ((*s)[0] == ' ' || (*s)[0] == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

/* The transfer coding list ends in "chunked" (case-insensitive). */
static bool ends_in_chunked(const uint8_t *v, size_t n)
{
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n >= 7 && rt_eq_nocase((const char *)v + n - 7, 7, "chunked") &&
	       (n == 7 || v[n - 8] == ',' || v[n - 8] == ' ' || v[n - 8] == '\t');
}

struct framing {
	bool chunked;
	bool has_length;
	uint64_t length;
};

static enum http_parse_result parse_status_line(const uint8_t *line, size_t len,
						struct http_response *out)
{
	/* "HTTP/1.x 200 Reason" */
	if (len < 12 || rt_memcmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' ||
	    line[8] != ' ')
		return HTTP_PARSE_ERROR;
	int status = 0;
	for (int i = 9; i < 12; i++) {
		if (line[i] < '0' || line[i] > '9')
			return HTTP_PARSE_ERROR;
		status = status * 10 + (line[i] - '0');
	}
	if (status < 100 || (len > 12 && line[12] != ' '))
		return HTTP_PARSE_ERROR;
	out->status = status;
	size_t r = 0;
	for (size_t i = 13; i < len && r + 1 < sizeof(out->reason); i++) {
		uint8_t c = line[i];
		out->reason[r++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	out->reason[r] = '\0';
	return HTTP_PARSE_DONE;
}

static enum http_parse_result parse_header(const uint8_t *line, size_t len, struct framing *f)
{
	size_t colon = 0;
	while (colon < len && is_token_char(line[colon]))
		colon++;
	if (colon == 0 || colon >= len || line[colon] != ':')
		return HTTP_PARSE_ERROR; /* also rejects obsolete line folding */
	const uint8_t *value = line + colon + 1;
	size_t vlen = len - colon - 1;
	trim(&value, &vlen);
	for (size_t i = 0; i < vlen; i++)
		if ((value[i] < 0x20 && value[i] != '\t') || value[i] == 0x7f)
			return HTTP_PARSE_ERROR;
	if (rt_eq_nocase((const char *)line, colon, "content-length")) {
		uint64_t v;
		if (vlen == 0 || vlen > 13 || !rt_parse_u64((const char *)value, vlen, &v) ||
		    v > MAX_CONTENT_LENGTH)
			return HTTP_PARSE_ERROR;
		if (f->has_length && f->length != v)
			return HTTP_PARSE_ERROR; /* conflicting lengths: smuggling */
		f->has_length = true;
		f->length = v;
	} else if (rt_eq_nocase((const char *)line, colon, "transfer-encoding")) {
		f->chunked = ends_in_chunked(value, vlen);
		if (!f->chunked)
			f->has_length = false; /* read to the end of the stream */
	}
	return HTTP_PARSE_DONE;
}

static void keep_body(struct http_response *out, const uint8_t *p, size_t n)
{
	size_t room = sizeof(out->body) - 1 - RT_MIN(out->body_len, sizeof(out->body) - 1);
	size_t take = RT_MIN(room, n);
	size_t at = out->body_len;
	for (size_t i = 0; i < take; i++) {
		uint8_t c = p[i];
		out->body[at + i] = (c >= 0x20 && c < 0x7f) ? (char)c : ' ';
	}
	out->body_len += n;
	out->body[RT_MIN(out->body_len, sizeof(out->body) - 1)] = '\0';
}

static enum http_parse_result parse_chunked(const uint8_t *buf, size_t n, size_t pos,
					    struct http_response *out)
{
	/* Each chunk needs at least 3 bytes, so the loop is bounded by n. */
	while (pos <= n) {
		const uint8_t *line;
		size_t len;
		enum http_parse_result r = take_line(buf, n, &pos, &line, &len);
		if (r != HTTP_PARSE_DONE)
			return r;
		uint64_t size = 0;
		size_t i = 0;
		while (i < len && rt_hex_digit(line[i]) >= 0) {
			if (i >= MAX_CHUNK_DIGITS)
				return HTTP_PARSE_ERROR;
			size = size * 16 + (uint64_t)rt_hex_digit(line[i]);
			i++;
		}
		if (i == 0 || (i < len && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
			return HTTP_PARSE_ERROR;
		if (size == 0) {
			/* Trailer fields until an empty line. */
			for (int t = 0; t < HTTP_MAX_HEADER_LINES; t++) {
				r = take_line(buf, n, &pos, &line, &len);
				if (r != HTTP_PARSE_DONE)
					return r;
				if (len == 0)
					return HTTP_PARSE_DONE;
			}
			return HTTP_PARSE_ERROR;
		}
		if (n - pos < size + 2)
			return HTTP_PARSE_INCOMPLETE;
		keep_body(out, buf + pos, (size_t)size);
		pos += (size_t)size;
		if (buf[pos] == '\r' && buf[pos + 1] == '\n')
			pos += 2;
		else
			return HTTP_PARSE_ERROR;
	}
	return HTTP_PARSE_INCOMPLETE;
}

enum http_parse_result http_response_parse(const uint8_t *buf, size_t n, bool eof,
					   struct http_response *out)
{
	rt_memset(out, 0, sizeof(*out));
	size_t pos = 0;
	for (int interim = 0; interim <= HTTP_MAX_INTERIM; interim++) {
		const uint8_t *line;
		size_t len;
		struct framing f = {false, false, 0};
		rt_memset(out, 0, sizeof(*out));
		enum http_parse_result r = take_line(buf, n, &pos, &line, &len);
		if (r == HTTP_PARSE_DONE)
			r = parse_status_line(line, len, out);
		int lines = 0;
		while (r == HTTP_PARSE_DONE) {
			r = take_line(buf, n, &pos, &line, &len);
			if (r != HTTP_PARSE_DONE)
				break;
			if (len == 0)
				break;
			if (++lines > HTTP_MAX_HEADER_LINES)
				return HTTP_PARSE_ERROR;
			r = parse_header(line, len, &f);
		}
		if (r == HTTP_PARSE_ERROR)
			return r;
		if (r == HTTP_PARSE_INCOMPLETE)
			return eof ? HTTP_PARSE_ERROR : r;
		if (out->status < 200) {
			if (out->status == 101)
				return HTTP_PARSE_ERROR; /* we never ask to switch protocols */
			continue;
		}
		out->headers_complete = true;
		if (out->status == 204 || out->status == 304)
			return HTTP_PARSE_DONE;
		if (f.chunked) {
			r = parse_chunked(buf, n, pos, out);
			return (r == HTTP_PARSE_INCOMPLETE && eof) ? HTTP_PARSE_ERROR : r;
		}
		if (f.has_length) {
			size_t have = n - pos;
			keep_body(out, buf + pos, (size_t)RT_MIN((uint64_t)have, f.length));
			if ((uint64_t)have >= f.length)
				return HTTP_PARSE_DONE;
			return eof ? HTTP_PARSE_ERROR : HTTP_PARSE_INCOMPLETE;
		}
		keep_body(out, buf + pos, n - pos);
		return eof ? HTTP_PARSE_DONE : HTTP_PARSE_INCOMPLETE;
	}
	return HTTP_PARSE_ERROR;
}
