/* Protobuf wire-format writer (see pb.h). */
#include "encode/pb.h"

size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint64_t pb_tag(uint32_t field, enum pb_wire wire)
{
	return ((uint64_t)field << 3) | (uint64_t)wire;
}

size_t pb_uint_field_size(uint32_t field, uint64_t v)
{
	return pb_varint_size(pb_tag(field, PB_WIRE_VARINT)) + pb_varint_size(v);
}

size_t pb_len_field_size(uint32_t field, size_t len)
{
	return pb_varint_size(pb_tag(field, PB_WIRE_LEN)) + pb_varint_size(len) + len;
}

size_t pb_encode_varint(uint8_t *dst, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		dst[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	dst[n++] = (uint8_t)v;
	return n;
}

size_t pb_encode_uint_field(uint8_t *dst, uint32_t field, uint64_t v)
{
	size_t n = pb_encode_varint(dst, pb_tag(field, PB_WIRE_VARINT));
	return n + pb_encode_varint(dst + n, v);
}

size_t pb_encode_len_header(uint8_t *dst, uint32_t field, size_t len)
{
	size_t n = pb_encode_varint(dst, pb_tag(field, PB_WIRE_LEN));
	return n + pb_encode_varint(dst + n, len);
}

void pb_put_varint(struct rt_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = pb_encode_varint(tmp, v);
	rt_buf_append(b, tmp, n);
}

void pb_put_uint(struct rt_buf *b, uint32_t field, uint64_t v)
{
	uint8_t tmp[20];
	rt_buf_append(b, tmp, pb_encode_uint_field(tmp, field, v));
}

void pb_put_int64(struct rt_buf *b, uint32_t field, int64_t v)
{
	pb_put_uint(b, field, (uint64_t)v);
}

void pb_put_len_header(struct rt_buf *b, uint32_t field, size_t len)
{
	uint8_t tmp[20];
	rt_buf_append(b, tmp, pb_encode_len_header(tmp, field, len));
}

void pb_put_bytes(struct rt_buf *b, uint32_t field, const void *p, size_t len)
{
	pb_put_len_header(b, field, len);
	rt_buf_append(b, p, len);
}
