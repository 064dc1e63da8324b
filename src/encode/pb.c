/* Protobuf wire-format writer and reader (see pb.h). */
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

void pb_put_fixed64(struct rt_buf *b, uint32_t field, uint64_t v)
{
	uint8_t tmp[18];
	size_t n = pb_encode_varint(tmp, pb_tag(field, PB_WIRE_FIXED64));
	for (int i = 0; i < 8; i++)
		tmp[n++] = (uint8_t)(v >> (8 * i));
	rt_buf_append(b, tmp, n);
}

bool pb_in_varint(struct pb_in *r, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return false;
		uint8_t c = *r->p++;
		if (shift == 63 && c > 1)
			return false; /* more than 64 bits */
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

bool pb_in_key(struct pb_in *r, uint32_t *field, enum pb_wire *wire)
{
	uint64_t key;
	if (!pb_in_varint(r, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return false;
	*field = (uint32_t)(key >> 3);
	*wire = (enum pb_wire)(key & 7);
	return true;
}

bool pb_in_len(struct pb_in *r, struct pb_in *sub)
{
	uint64_t n;
	if (!pb_in_varint(r, &n) || n > (uint64_t)(r->end - r->p))
		return false;
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return true;
}

bool pb_in_skip(struct pb_in *r, enum pb_wire wire)
{
	uint64_t v;
	struct pb_in sub;
	switch (wire) {
	case PB_WIRE_VARINT: return pb_in_varint(r, &v);
	case PB_WIRE_LEN: return pb_in_len(r, &sub);
	case PB_WIRE_FIXED64:
		if (r->end - r->p < 8)
			return false;
		r->p += 8;
		return true;
	case PB_WIRE_FIXED32:
		if (r->end - r->p < 4)
			return false;
		r->p += 4;
		return true;
	default: return false;
	}
}
