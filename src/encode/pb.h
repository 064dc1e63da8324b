/* A minimal protobuf wire-format writer into an rt_buf.
 *
 * Nested messages are written as tag + length + body, with the body's
 * length computed beforehand by the caller from the *_size() helpers, so
 * nothing is ever copied or shifted after the fact.  All integers are plain
 * varints (int64 is not zigzag: a negative value takes 10 bytes).  Errors
 * are sticky in the rt_buf (`failed`), checked once at the end.
 */
#ifndef STOWAWAY_ENCODE_PB_H
#define STOWAWAY_ENCODE_PB_H

#include "rt/rt.h"

enum pb_wire { PB_WIRE_VARINT = 0, PB_WIRE_FIXED64 = 1, PB_WIRE_LEN = 2, PB_WIRE_FIXED32 = 5 };

/* Bytes of v as a varint (1..10). */
size_t pb_varint_size(uint64_t v);
/* Bytes of a whole field: tag + varint value. */
size_t pb_uint_field_size(uint32_t field, uint64_t v);
/* Bytes of a whole length-delimited field whose body is len bytes. */
size_t pb_len_field_size(uint32_t field, size_t len);

/* Writers into caller memory (for small messages assembled in a scratch
 * buffer, then appended at once); each returns the bytes written.
 * pb_encode_varint needs room for 10 bytes, the field writers for 20. */
size_t pb_encode_varint(uint8_t *dst, uint64_t v);
size_t pb_encode_uint_field(uint8_t *dst, uint32_t field, uint64_t v);
size_t pb_encode_len_header(uint8_t *dst, uint32_t field, size_t len);
void pb_put_varint(struct rt_buf *b, uint64_t v);
void pb_put_uint(struct rt_buf *b, uint32_t field, uint64_t v);
void pb_put_int64(struct rt_buf *b, uint32_t field, int64_t v);
/* Tag and length of a length-delimited field; the caller appends len bytes next. */
void pb_put_len_header(struct rt_buf *b, uint32_t field, size_t len);
void pb_put_bytes(struct rt_buf *b, uint32_t field, const void *p, size_t len);
/* A fixed64 field (little-endian, 8 bytes). */
void pb_put_fixed64(struct rt_buf *b, uint32_t field, uint64_t v);

/* ---- reading: a bounds-checked cursor over wire-format bytes ----
 * Every function returns false on malformed or truncated input and never
 * reads outside [p, end). */
struct pb_in {
	const uint8_t *p, *end;
};
/* A varint of at most 10 bytes whose value fits 64 bits. */
bool pb_in_varint(struct pb_in *r, uint64_t *out);
/* The next field's number and wire type; false at the end or on bad input. */
bool pb_in_key(struct pb_in *r, uint32_t *field, enum pb_wire *wire);
/* A length-delimited field's bytes as a sub-reader. */
bool pb_in_len(struct pb_in *r, struct pb_in *sub);
/* Skips a field of the given wire type. */
bool pb_in_skip(struct pb_in *r, enum pb_wire wire);
/* A varint field's value; for LEN fields of a packed repeated varint, call
 * pb_in_len and then pb_in_varint until the sub-reader is empty. */
static inline bool pb_in_done(const struct pb_in *r) { return r->p >= r->end; }

#endif
