/* Text encodings the exporters need on the wire: JSON strings, URL
 * percent-encoding, base64 (basic auth), RFC 3339 timestamps, header
 * values and multipart/form-data parts.
 * All append to an rt_buf (which records allocation failure itself). */
#ifndef STOWAWAY_EXPORT_TEXT_H
#define STOWAWAY_EXPORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/rt.h"

/* Broken-down UTC time (proleptic Gregorian calendar). */
struct export_civil_time {
	int64_t year;
	unsigned month;  /* 1..12 */
	unsigned day;    /* 1..31 */
	unsigned hour, minute, second;
	unsigned weekday; /* 0 = Sunday */
	unsigned yearday; /* 0..365 */
};

/* Seconds since the Unix epoch (may be negative) -> UTC calendar fields. */
void export_civil_from_unix(int64_t unix_s, struct export_civil_time *out);

/* "2026-01-01T00:00:00.000000000Z" from CLOCK_REALTIME nanoseconds. */
void export_append_rfc3339_ns(struct rt_buf *b, uint64_t realtime_ns);

/* The bytes of s as the inside of a JSON string (no quotes added): escapes
 * '"', '\\' and control characters; bytes >= 0x80 pass unchanged. */
void export_append_json_escaped(struct rt_buf *b, const char *s, size_t n);

/* Percent-encodes every byte except RFC 3986 unreserved characters. */
void export_append_url_encoded(struct rt_buf *b, const char *s, size_t n);

/* A multipart/form-data boundary: "stowaway" and 32 random hex digits
 * (from `fallback` when no random bytes can be read), NUL-terminated in
 * out (cap >= EXPORT_BOUNDARY_MAX). */
#define EXPORT_BOUNDARY_MAX 41
void export_make_boundary(char *out, size_t cap, uint64_t fallback);

/* Where a part of a multipart/form-data body begins: "--boundary", its
 * Content-Disposition (form field `name`, `filename`) and Content-Type, and
 * the blank line before the part's bytes.  A part after the first is
 * preceded by "\r\n" (the caller's), and export_form_end closes the body:
 * "\r\n--boundary--\r\n". */
void export_form_part(struct rt_buf *b, const char *boundary, const char *name,
		      const char *filename, const char *content_type);
void export_form_end(struct rt_buf *b, const char *boundary);

/* True when s can be a header value: no control character (CR, LF, ...)
 * that could end the line or inject another. */
bool export_header_safe(const char *s);

/* Standard base64 with padding. */
void export_append_base64(struct rt_buf *b, const uint8_t *p, size_t n);

#endif
