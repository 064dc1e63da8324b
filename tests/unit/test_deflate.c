/* Unit tests of the decompressors and checksums in src/deflate/
 * (deflate_decompress.c, gzip_decompress.c, zlib_decompress.c, crc32.c,
 * adler32.c); zlib produces the streams and computes the reference sums. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "deflate/crc32_table.h"
#include "deflate/deflate.h"
#include "unit/check.h"

enum { WRAP_RAW, WRAP_ZLIB, WRAP_GZIP };

/* zlib's compression of in[0..n) at `level` in one wrapper. */
static uint8_t *zlib_pack(const uint8_t *in, size_t n, int level, int wrap, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	int bits = wrap == WRAP_RAW ? -15 : wrap == WRAP_ZLIB ? 15 : 31;
	if (deflateInit2(&z, level, Z_DEFLATED, bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	size_t cap = deflateBound(&z, (uLong)n) + 64;
	uint8_t *out = malloc(cap);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (!out || deflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}

static int unpack(int wrap, const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *used,
		  size_t *out_len)
{
	if (wrap == WRAP_RAW)
		return deflate_decompress(in, n, out, cap, used, out_len);
	if (wrap == WRAP_ZLIB)
		return zlib_decompress(in, n, out, cap, used, out_len);
	return gzip_decompress(in, n, out, cap, used, out_len);
}

/* Text-like data with repeats near and far, and a random tail. */
static uint8_t *sample_data(size_t n)
{
	uint8_t *d = malloc(n ? n : 1);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		if (i > 40000 && (x >> 16) % 3 == 0)
			d[i] = d[i - 40000 + (x >> 24) % 7];
		else if (i < n / 2)
			d[i] = (uint8_t)("stowaway profile frame "[(i + (x >> 28)) % 23]);
		else
			d[i] = (uint8_t)(x >> 16);
	}
	return d;
}

static void test_crc32_table_and_zlib(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
		CHECK(crc32_table[0][i] == c);
		for (int t = 1; t < 8; t++)
			CHECK(crc32_table[t][i] ==
			      ((crc32_table[t - 1][i] >> 8) ^ crc32_table[0][crc32_table[t - 1][i] & 0xff]));
	}
	size_t n = 100003;
	uint8_t *d = sample_data(n);
	CHECK(crc32_update(0, d, 0) == 0);
	CHECK_EQ_U64(crc32_update(0, "123456789", 9), 0xCBF43926u);
	for (size_t len = 0; len < 40; len++)
		CHECK_EQ_U64(crc32_update(0, d + 3, len), crc32(0, d + 3, (uInt)len));
	/* Chunked equals whole. */
	uint32_t c = 0;
	for (size_t off = 0; off < n; off += 997)
		c = crc32_update(c, d + off, n - off < 997 ? n - off : 997);
	CHECK_EQ_U64(c, crc32(0, d, (uInt)n));
	free(d);
}

static void test_adler32_zlib(void)
{
	size_t n = 3 * 5552 + 77;
	uint8_t *d = malloc(n);
	memset(d, 0xff, n); /* the worst case for the sums' overflow */
	CHECK_EQ_U64(adler32_update(1, d, n), adler32(1, d, (uInt)n));
	free(d);
	d = sample_data(n);
	CHECK_EQ_U64(adler32_update(1, d, n), adler32(1, d, (uInt)n));
	CHECK_EQ_U64(adler32_update(1, "Wikipedia", 9), 0x11E60398u);
	free(d);
}

/* zlib's output at every level and wrapper, several sizes, decoded exactly;
 * one byte less of output space says DEFLATE_NO_SPACE. */
static void test_decode_zlib_streams(void)
{
	static const size_t sizes[] = {0, 1, 300, 70000, 300000};
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		size_t n = sizes[si];
		uint8_t *d = sample_data(n);
		uint8_t *out = malloc(n + 16);
		for (int wrap = WRAP_RAW; wrap <= WRAP_GZIP; wrap++) {
			for (int level = 0; level <= 9; level += (n > 1000 ? 3 : 1)) {
				size_t packed_len = 0, used = 0, got = 0;
				uint8_t *packed = zlib_pack(d, n, level, wrap, &packed_len);
				int rc = unpack(wrap, packed, packed_len, out, n + 16, &used, &got);
				CHECK(rc == DEFLATE_OK);
				CHECK(used == packed_len);
				CHECK(got == n);
				CHECK(rc != DEFLATE_OK || n == 0 || memcmp(out, d, n) == 0);
				if (n > 0)
					CHECK(unpack(wrap, packed, packed_len, out, n - 1, &used, &got) ==
					      DEFLATE_NO_SPACE);
				free(packed);
			}
		}
		free(out);
		free(d);
	}
}

/* Every truncation fails cleanly, and a damaged trailer is caught. */
static void test_truncated_and_corrupt(void)
{
	size_t n = 5000, packed_len = 0, used = 0, got = 0;
	uint8_t *d = sample_data(n);
	uint8_t *out = malloc(n);
	for (int wrap = WRAP_RAW; wrap <= WRAP_GZIP; wrap++) {
		uint8_t *packed = zlib_pack(d, n, 6, wrap, &packed_len);
		for (size_t cut = 0; cut < packed_len; cut++)
			CHECK(unpack(wrap, packed, cut, out, n, &used, &got) != DEFLATE_OK);
		if (wrap != WRAP_RAW) {
			packed[packed_len - (wrap == WRAP_GZIP ? 8 : 1)] ^= 1;
			CHECK(unpack(wrap, packed, packed_len, out, n, &used, &got) == DEFLATE_BAD_CHECKSUM);
			packed[packed_len - (wrap == WRAP_GZIP ? 8 : 1)] ^= 1;
		}
		if (wrap == WRAP_GZIP) {
			packed[packed_len - 1] ^= 1;
			CHECK(unpack(wrap, packed, packed_len, out, n, &used, &got) == DEFLATE_BAD_SIZE);
			packed[packed_len - 1] ^= 1;
			CHECK(gzip_trailer_size(packed, packed_len) == n);
			CHECK(gzip_is_gzip(packed, packed_len));
			packed[2] = 7; /* not deflate */
			CHECK(unpack(wrap, packed, packed_len, out, n, &used, &got) == DEFLATE_BAD_HEADER);
		}
		if (wrap == WRAP_ZLIB) {
			packed[1] ^= 0x20; /* preset dictionary (and a bad check) */
			CHECK(unpack(wrap, packed, packed_len, out, n, &used, &got) == DEFLATE_BAD_HEADER);
		}
		free(packed);
	}
	/* Block type 3 is reserved; a stored block's length must match its complement. */
	static const uint8_t bad_type[] = {0x07};
	CHECK(deflate_decompress(bad_type, 1, out, n, &used, &got) == DEFLATE_BAD_BLOCK_TYPE);
	static const uint8_t bad_stored[] = {0x01, 0x05, 0x00, 0xfa, 0xfe, 'a', 'b', 'c', 'd', 'e'};
	CHECK(deflate_decompress(bad_stored, sizeof(bad_stored), out, n, &used, &got) ==
	      DEFLATE_BAD_STORED_LENGTH);
	static const uint8_t good_stored[] = {0x01, 0x05, 0x00, 0xfa, 0xff, 'a', 'b', 'c', 'd', 'e'};
	CHECK(deflate_decompress(good_stored, sizeof(good_stored), out, n, &used, &got) == DEFLATE_OK);
	CHECK(got == 5 && memcmp(out, "abcde", 5) == 0);
	CHECK(strcmp(deflate_status_text(DEFLATE_TRUNCATED), "compressed data is truncated") == 0);
	free(out);
	free(d);
}

/* Our compressor's output decodes with our decompressor. */
static void test_round_trip_ours(void)
{
	size_t n = 200000, used = 0, got = 0;
	uint8_t *d = sample_data(n);
	uint8_t *out = malloc(n);
	for (int level = 1; level <= 9; level += 4) {
		struct rt_buf packed = {0};
		CHECK(gz_compress(d, n, level, &packed) == 0);
		CHECK(gzip_decompress(packed.data, packed.len, out, n, &used, &got) == DEFLATE_OK);
		CHECK(used == packed.len && got == n && memcmp(out, d, n) == 0);
		rt_buf_free(&packed);
	}
	free(out);
	free(d);
}

int main(void)
{
	RUN(test_crc32_table_and_zlib);
	RUN(test_adler32_zlib);
	RUN(test_decode_zlib_streams);
	RUN(test_truncated_and_corrupt);
	RUN(test_round_trip_ours);
	return CHECK_DONE();
}
