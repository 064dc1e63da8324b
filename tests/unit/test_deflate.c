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
		for (int t = 1; t < 16; t++)
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


/* ---- streams built bit by bit, to reach what zlib's output rarely does ---- */

struct bit_writer_t {
	uint8_t *p;
	size_t len, cap;
	uint64_t acc;
	unsigned n;
};

static void put_bits(struct bit_writer_t *w, uint32_t v, unsigned nbits)
{
	w->acc |= (uint64_t)v << w->n;
	w->n += nbits;
	while (w->n >= 8) {
		if (w->len == w->cap) {
			w->cap = w->cap ? 2 * w->cap : 4096;
			w->p = realloc(w->p, w->cap);
			if (!w->p)
				abort();
		}
		w->p[w->len++] = (uint8_t)w->acc;
		w->acc >>= 8;
		w->n -= 8;
	}
}

static void flush_bits(struct bit_writer_t *w)
{
	if (w->n > 0)
		put_bits(w, 0, 8 - w->n);
}

/* A Huffman code goes first bit first: its most significant bit. */
static void put_code(struct bit_writer_t *w, uint32_t code, unsigned len)
{
	for (unsigned i = len; i-- > 0;)
		put_bits(w, (code >> i) & 1u, 1);
}

/* Canonical codes (RFC 1951, 3.2.2) of lengths[0..n). */
static void canonical_codes(const uint8_t *lengths, unsigned n, uint32_t *codes)
{
	unsigned count[16] = {0}, next[16] = {0};
	for (unsigned i = 0; i < n; i++)
		count[lengths[i]]++;
	count[0] = 0;
	for (unsigned len = 1, code = 0; len < 16; len++) {
		code = (code + count[len - 1]) << 1;
		next[len] = code;
	}
	for (unsigned i = 0; i < n; i++)
		codes[i] = lengths[i] ? next[lengths[i]]++ : 0;
}

/* The header of a dynamic block: its code lengths sent with a fixed,
 * complete code-length code (4 bits for 0..11 and 18, 5 for 12..17), zero
 * runs as 17 and 18. */
static void put_dynamic_header(struct bit_writer_t *w, bool final, const uint8_t *lit_len,
			       unsigned hlit, const uint8_t *dist_len, unsigned hdist)
{
	static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
	uint8_t cl_len[19];
	uint32_t cl_code[19];
	for (unsigned i = 0; i < 19; i++)
		cl_len[i] = (i >= 12 && i <= 17) ? 5 : 4;
	canonical_codes(cl_len, 19, cl_code);
	put_bits(w, final, 1);
	put_bits(w, 2, 2);
	put_bits(w, hlit - 257, 5);
	put_bits(w, hdist - 1, 5);
	put_bits(w, 19 - 4, 4);
	for (unsigned i = 0; i < 19; i++)
		put_bits(w, cl_len[order[i]], 3);
	uint8_t all[286 + 30];
	memcpy(all, lit_len, hlit);
	memcpy(all + hlit, dist_len, hdist);
	for (unsigned i = 0; i < hlit + hdist;) {
		unsigned run = 0;
		while (i + run < hlit + hdist && all[i + run] == 0 && run < 138)
			run++;
		if (run >= 11) {
			put_code(w, cl_code[18], cl_len[18]);
			put_bits(w, run - 11, 7);
			i += run;
		} else if (run >= 3) {
			put_code(w, cl_code[17], cl_len[17]);
			put_bits(w, run - 3, 3);
			i += run;
		} else {
			put_code(w, cl_code[all[i]], cl_len[all[i]]);
			i++;
		}
	}
}

static const uint16_t len_base_of[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
					 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra_of[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
					 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base_of[30] = {1,    2,    3,    4,    5,    7,     9,     13,    17,   25,
					  33,   49,   65,   97,   129,  193,   257,   385,   513,  769,
					  1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra_of[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
					  6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* One dynamic block whose codes run to 15 bits: literals, the end of block
 * and lengths (one of 258) of 11 to 15 bits, past the first table level;
 * distance codes of 1 to 15 bits (distances 1..256, overlapping copies
 * among them).  *want gets the bytes it decodes to; *match_at the output
 * offsets where its matches of 258 start (up to 64). */
struct crafted {
	uint8_t *stream, *want;
	size_t stream_len, want_len;
	size_t match_at[64];
	unsigned nmatch_at;
};

static void craft_long_codes(unsigned ops, uint32_t seed, struct crafted *c)
{
	uint8_t lit_len[286] = {0}, dist_len[16];
	for (unsigned i = 0; i <= 10; i++)
		lit_len[97 + i] = (uint8_t)(i + 1); /* 'a'..'k': 1..11 bits */
	lit_len[256] = 12;
	lit_len[257] = 13; /* length 3 */
	lit_len[122] = 14; /* 'z' */
	lit_len[265] = 15; /* lengths 11, 12 */
	lit_len[285] = 15; /* length 258 */
	for (unsigned d = 0; d < 15; d++)
		dist_len[d] = (uint8_t)(d + 1);
	dist_len[15] = 15;
	uint32_t lit_code[286], dist_code[16];
	canonical_codes(lit_len, 286, lit_code);
	canonical_codes(dist_len, 16, dist_code);
	static const uint16_t lits[] = {97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 122};
	static const uint16_t lens[] = {257, 265, 285};
	struct bit_writer_t w = {0};
	memset(c, 0, sizeof(*c));
	c->want = malloc((size_t)ops * 258 + 1);
	put_dynamic_header(&w, true, lit_len, 286, dist_len, 16);
	uint32_t x = seed;
	for (unsigned op = 0; op < ops; op++) {
		x = x * 1103515245u + 12345u;
		unsigned r = x >> 8;
		if (r % 2 == 0 || c->want_len < 1) {
			unsigned sym = lits[(r >> 1) % 12];
			put_code(&w, lit_code[sym], lit_len[sym]);
			c->want[c->want_len++] = (uint8_t)sym;
			continue;
		}
		unsigned lsym = lens[(r >> 1) % 3], li = lsym - 257;
		unsigned lextra = (r >> 3) & ((1u << len_extra_of[li]) - 1u);
		size_t length = len_base_of[li] + lextra;
		unsigned dsym = (r >> 5) % 16, dextra = (r >> 9) & ((1u << dist_extra_of[dsym]) - 1u);
		size_t distance = dist_base_of[dsym] + dextra;
		if (distance > c->want_len) {
			dsym = 0;
			dextra = 0;
			distance = 1;
		}
		put_code(&w, lit_code[lsym], lit_len[lsym]);
		put_bits(&w, lextra, len_extra_of[li]);
		put_code(&w, dist_code[dsym], dist_len[dsym]);
		put_bits(&w, dextra, dist_extra_of[dsym]);
		if (length == 258 && c->nmatch_at < 64)
			c->match_at[c->nmatch_at++] = c->want_len;
		for (size_t i = 0; i < length; i++, c->want_len++)
			c->want[c->want_len] = c->want[c->want_len - distance];
	}
	put_code(&w, lit_code[256], lit_len[256]);
	flush_bits(&w);
	c->stream = w.p;
	c->stream_len = w.len;
}

/* zlib's raw inflate of in[0..n): 0 and *out_len when it ends the stream. */
static int zlib_raw_inflate(const uint8_t *in, size_t n, uint8_t *out, size_t cap, size_t *out_len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, -15) != Z_OK)
		abort();
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	int rc = inflate(&z, Z_FINISH);
	*out_len = z.total_out;
	inflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

/* Our decode of in[0..n) from a buffer of exactly n bytes into one of
 * exactly cap bytes, so that AddressSanitizer sees any access past them. */
static int decode_exact(const uint8_t *in, size_t n, size_t cap, uint8_t **out, size_t *used, size_t *got)
{
	uint8_t *copy = malloc(n ? n : 1);
	memcpy(copy, in, n);
	*out = malloc(cap ? cap : 1);
	int rc = deflate_decompress(copy, n, *out, cap, used, got);
	free(copy);
	return rc;
}

static void test_long_codes_subtables(void)
{
	struct crafted c;
	craft_long_codes(20000, 7, &c);
	uint8_t *judge = malloc(c.want_len + 1), *out = NULL;
	size_t used = 0, got = 0;
	/* zlib takes the stream and agrees on its bytes. */
	CHECK(zlib_raw_inflate(c.stream, c.stream_len, judge, c.want_len + 1, &got) == 0);
	CHECK(got == c.want_len && memcmp(judge, c.want, got) == 0);
	CHECK(decode_exact(c.stream, c.stream_len, c.want_len, &out, &used, &got) == DEFLATE_OK);
	CHECK(used == c.stream_len && got == c.want_len && memcmp(out, c.want, got) == 0);
	free(out);
	CHECK(c.nmatch_at >= 8);
	/* The output ends inside a match (fast loop and careful step alike):
	 * DEFLATE_NO_SPACE, and nothing written past the buffer. */
	for (unsigned i = 0; i < c.nmatch_at; i += 3) {
		static const size_t into[] = {1, 7, 100, 257};
		for (unsigned k = 0; k < 4; k++) {
			CHECK(decode_exact(c.stream, c.stream_len, c.match_at[i] + into[k], &out, &used, &got) ==
			      DEFLATE_NO_SPACE);
			free(out);
		}
	}
	for (size_t cap = 0; cap < c.want_len; cap += c.want_len / 97 + 1) {
		CHECK(decode_exact(c.stream, c.stream_len, cap, &out, &used, &got) == DEFLATE_NO_SPACE);
		free(out);
	}
	/* The input ends anywhere, in the fast loop or in the careful step:
	 * an error, no read past it. */
	for (size_t cut = 0; cut < c.stream_len; cut += (cut + 600 < c.stream_len ? 37 : 1)) {
		CHECK(decode_exact(c.stream, cut, c.want_len, &out, &used, &got) == DEFLATE_TRUNCATED);
		free(out);
	}
	free(judge);
	free(c.stream);
	free(c.want);
}

struct collect_sink {
	uint8_t *data;
	size_t len;
};

static bool collect_put(void *ctx, uint64_t offset, const uint8_t *p, size_t n)
{
	struct collect_sink *s = ctx;
	if (offset != s->len)
		return false;
	memcpy(s->data + s->len, p, n);
	s->len += n;
	return true;
}

/* Streaming through a window: the same bytes whatever point `until` asks
 * to hand over at, matches crossing the window's end included. */
static void test_long_codes_streaming(void)
{
	struct crafted c;
	craft_long_codes(3000, 11, &c);
	static uint8_t work[65536];
	struct collect_sink s = {malloc(c.want_len + 1), 0};
	struct inflate_sink sink = {&s, collect_put, NULL};
	struct inflate_resume start = {0, 0, NULL, 0};
	for (uint64_t until = 0; until < c.want_len; until += c.want_len / 13 + 1) {
		s.len = 0;
		CHECK(deflate_stream(c.stream, c.stream_len, &start, until, work, sizeof(work), &sink) ==
		      DEFLATE_OK);
		CHECK(s.len == c.want_len && memcmp(s.data, c.want, s.len) == 0);
	}
	free(s.data);
	free(c.stream);
	free(c.want);
}

/* Incomplete codes, as zlib takes them: a single one-bit distance code
 * decodes (its other bit pattern is an error); any other incomplete
 * literal/length code is refused. */
static void test_incomplete_codes(void)
{
	uint8_t lit_len[286] = {0}, dist_len[1] = {1};
	lit_len['a'] = 1;
	lit_len[256] = 2;
	lit_len[257] = 2; /* length 3: complete */
	uint32_t lit_code[286], dist_code[1];
	canonical_codes(lit_len, 286, lit_code);
	canonical_codes(dist_len, 1, dist_code);
	struct bit_writer_t w = {0};
	put_dynamic_header(&w, true, lit_len, 258, dist_len, 1);
	put_code(&w, lit_code['a'], 1);
	put_code(&w, lit_code[257], 2);
	put_code(&w, dist_code[0], 1); /* "aaaa" */
	put_code(&w, lit_code[256], 2);
	flush_bits(&w);
	uint8_t out[16], judge[16];
	size_t used = 0, got = 0, zgot = 0;
	CHECK(deflate_decompress(w.p, w.len, out, sizeof(out), &used, &got) == DEFLATE_OK);
	CHECK(zlib_raw_inflate(w.p, w.len, judge, sizeof(judge), &zgot) == 0);
	CHECK(got == 4 && zgot == 4 && memcmp(out, "aaaa", 4) == 0 && memcmp(judge, "aaaa", 4) == 0);
	/* The distance code's unused pattern. */
	w.len = 0;
	w.n = 0;
	w.acc = 0;
	put_dynamic_header(&w, true, lit_len, 258, dist_len, 1);
	put_code(&w, lit_code['a'], 1);
	put_code(&w, lit_code[257], 2);
	put_code(&w, 1, 1);
	put_code(&w, lit_code[256], 2);
	flush_bits(&w);
	CHECK(deflate_decompress(w.p, w.len, out, sizeof(out), &used, &got) == DEFLATE_BAD_CODE);
	CHECK(zlib_raw_inflate(w.p, w.len, judge, sizeof(judge), &zgot) != 0);
	/* An incomplete literal/length code of more than one code. */
	lit_len[257] = 0;
	w.len = 0;
	w.n = 0;
	w.acc = 0;
	put_dynamic_header(&w, true, lit_len, 258, dist_len, 1);
	put_code(&w, 0, 1);
	put_code(&w, 2, 2);
	flush_bits(&w);
	CHECK(deflate_decompress(w.p, w.len, out, sizeof(out), &used, &got) == DEFLATE_BAD_CODE_LENGTHS);
	CHECK(zlib_raw_inflate(w.p, w.len, judge, sizeof(judge), &zgot) != 0);
	free(w.p);
}

/* zlib's output for data of every kind (random, runs, short periods,
 * text), every level and strategy, decoded exactly. */
static void test_zlib_levels_strategies(void)
{
	static const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_HUFFMAN_ONLY, Z_RLE, Z_FIXED};
	size_t n = 120000;
	uint8_t *d = malloc(n), *out = malloc(n);
	uint32_t x = 99;
	for (int kind = 0; kind < 4; kind++) {
		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			uint8_t r = (uint8_t)(x >> 16);
			if (kind == 0)
				d[i] = r;
			else if (kind == 1)
				d[i] = (uint8_t)((i / (1 + r % 64)) % 3); /* runs: distance 1 */
			else if (kind == 2)
				d[i] = i >= 7 && r % 5 ? d[i - 2 - (i / 1000) % 6] : r; /* periods 2..7 */
			else
				d[i] = (uint8_t)("DW_TAG_subprogram DW_AT_name\0\x01\x13"[(i * 7 + r % 3) % 31]);
		}
		for (int level = 0; level <= 9; level++) {
			for (unsigned si = 0; si < sizeof(strategies) / sizeof(strategies[0]); si++) {
				z_stream z;
				memset(&z, 0, sizeof(z));
				if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, strategies[si]) != Z_OK)
					abort();
				size_t cap = deflateBound(&z, (uLong)n) + 64;
				uint8_t *packed = malloc(cap);
				z.next_in = d;
				z.avail_in = (uInt)n;
				z.next_out = packed;
				z.avail_out = (uInt)cap;
				if (deflate(&z, Z_FINISH) != Z_STREAM_END)
					abort();
				size_t packed_len = z.total_out, used = 0, got = 0;
				deflateEnd(&z);
				CHECK(deflate_decompress(packed, packed_len, out, n, &used, &got) == DEFLATE_OK);
				CHECK(used == packed_len && got == n && memcmp(out, d, n) == 0);
				free(packed);
			}
		}
	}
	free(out);
	free(d);
}

/* Adler-32 at every length and alignment, against zlib's. */
static void test_adler32_lengths(void)
{
	size_t n = 6000;
	uint8_t *d = sample_data(n);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len < 80; len++)
			CHECK_EQ_U64(adler32_update(1, d + off, len), adler32(1, d + off, (uInt)len));
	for (size_t len = 5540; len < 5570 && len <= n; len++)
		CHECK_EQ_U64(adler32_update(7, d, len), adler32(7, d, (uInt)len));
	free(d);
}

int main(void)
{
	RUN(test_crc32_table_and_zlib);
	RUN(test_adler32_zlib);
	RUN(test_decode_zlib_streams);
	RUN(test_truncated_and_corrupt);
	RUN(test_round_trip_ours);
	RUN(test_long_codes_subtables);
	RUN(test_long_codes_streaming);
	RUN(test_incomplete_codes);
	RUN(test_zlib_levels_strategies);
	RUN(test_adler32_lengths);
	return CHECK_DONE();
}
