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

enum pb_wire { PB_WIRE_VARINT = 0, PB_WIRE_LEN = 2 };

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

#endif
