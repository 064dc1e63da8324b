/* zlib stream (RFC 1950): 2-byte header (CM 8, window up to 32 KiB, no
 * preset dictionary, FCHECK), DEFLATE body, big-endian Adler-32 trailer.
 * No state, no allocation. */
#include "deflate/deflate.h"

#define ZLIB_CM_DEFLATE 8
#define ZLIB_MAX_CINFO 7
#define ZLIB_FDICT 0x20

bool zlib_header_ok(const void *data, size_t len)
{
	const uint8_t *in = data;
	if (len < 2)
		return false;
	unsigned cmf = in[0], flg = in[1];
	return (cmf & 0x0f) == ZLIB_CM_DEFLATE && (cmf >> 4) <= ZLIB_MAX_CINFO && !(flg & ZLIB_FDICT) &&
	       (cmf << 8 | flg) % 31 == 0;
}

int zlib_decompress(const void *data, size_t len, void *out, size_t out_cap, size_t *in_used,
		    size_t *out_len)
{
	const uint8_t *in = data;
	if (len < 2)
		return DEFLATE_TRUNCATED;
	if (!zlib_header_ok(in, len))
		return DEFLATE_BAD_HEADER;
	size_t used = 0, n = 0;
	int rc = deflate_decompress(in + 2, len - 2, out, out_cap, &used, &n);
	if (rc != DEFLATE_OK)
		return rc;
	size_t pos = 2 + used;
	if (len - pos < 4)
		return DEFLATE_TRUNCATED;
	uint32_t want = (uint32_t)in[pos] << 24 | (uint32_t)in[pos + 1] << 16 |
			(uint32_t)in[pos + 2] << 8 | in[pos + 3];
	if (adler32_update(1, out, n) != want)
		return DEFLATE_BAD_CHECKSUM;
	if (in_used)
		*in_used = pos + 4;
	*out_len = n;
	return DEFLATE_OK;
}
