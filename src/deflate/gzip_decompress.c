/* gzip member (RFC 1952): header fields skipped, DEFLATE body, CRC-32 and
 * ISIZE trailer checked.  No state, no allocation. */
#include "deflate/deflate.h"

#include "rt/rt.h"

enum { GZIP_FHCRC = 2, GZIP_FEXTRA = 4, GZIP_FNAME = 8, GZIP_FCOMMENT = 16, GZIP_RESERVED = 0xe0 };
#define GZIP_MIN_SIZE 18 /* 10-byte header, an empty block is 2 bytes, 8-byte trailer */

bool gzip_is_gzip(const void *in, size_t len)
{
	const uint8_t *p = in;
	return len >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

uint32_t gzip_trailer_size(const void *in, size_t len)
{
	return len < GZIP_MIN_SIZE ? 0 : rt_load_le32((const uint8_t *)in + len - 4);
}

/* Skips a zero-terminated header field. */
static int skip_cstring(const uint8_t *in, size_t len, size_t *pos)
{
	if (*pos >= len)
		return DEFLATE_TRUNCATED;
	const uint8_t *nul = rt_memchr(in + *pos, 0, len - *pos);
	if (!nul)
		return DEFLATE_TRUNCATED;
	*pos = (size_t)(nul - in) + 1;
	return DEFLATE_OK;
}

int gzip_decompress(const void *data, size_t len, void *out, size_t out_cap, size_t *in_used,
		    size_t *out_len)
{
	const uint8_t *in = data;
	if (len < GZIP_MIN_SIZE)
		return gzip_is_gzip(in, len) || len < 2 ? DEFLATE_TRUNCATED : DEFLATE_BAD_HEADER;
	if (!gzip_is_gzip(in, len) || in[2] != 8 || (in[3] & GZIP_RESERVED))
		return DEFLATE_BAD_HEADER;
	unsigned flags = in[3];
	size_t pos = 10;
	if (flags & GZIP_FEXTRA) {
		size_t xlen = in[pos] | (size_t)in[pos + 1] << 8;
		pos += 2;
		if (len - pos < xlen)
			return DEFLATE_TRUNCATED;
		pos += xlen;
	}
	int rc = DEFLATE_OK;
	if (flags & GZIP_FNAME)
		rc = skip_cstring(in, len, &pos);
	if (rc == DEFLATE_OK && (flags & GZIP_FCOMMENT))
		rc = skip_cstring(in, len, &pos);
	if (rc != DEFLATE_OK)
		return rc;
	if (flags & GZIP_FHCRC)
		pos += 2;
	if (pos > len)
		return DEFLATE_TRUNCATED;
	size_t used = 0, n = 0;
	rc = deflate_decompress(in + pos, len - pos, out, out_cap, &used, &n);
	if (rc != DEFLATE_OK)
		return rc;
	pos += used;
	if (len - pos < 8)
		return DEFLATE_TRUNCATED;
	if (crc32_update(0, out, n) != rt_load_le32(in + pos))
		return DEFLATE_BAD_CHECKSUM;
	if ((uint32_t)n != rt_load_le32(in + pos + 4))
		return DEFLATE_BAD_SIZE;
	if (in_used)
		*in_used = pos + 8;
	*out_len = n;
	return DEFLATE_OK;
}
