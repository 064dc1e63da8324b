/* Fuzz target: the DEFLATE, gzip and zlib decompressors (src/deflate/) on
 * arbitrary bytes must fail cleanly or stay inside their buffers, streaming
 * (deflate_stream, from the start and resumed at a block start it reported)
 * must give the same bytes as the one-shot decoder, the raw decoder must
 * agree with zlib's (same streams taken, same bytes, same length read), and
 * a round trip through our gzip compressor must give the input back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "deflate/deflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_CAP ((size_t)1 << 20)
#define WORK_CAP ((size_t)65536)

/* A streaming pass: bytes compared with the one-shot output as they come;
 * one block start (and its window) kept to resume from. */
struct stream_check {
	const uint8_t *want;
	size_t want_len;
	uint64_t got;
	uint64_t stop_at;
	uint32_t blocks, keep_block;
	struct inflate_resume mark;
	uint8_t window[32768];
};

static bool check_put(void *ctx, uint64_t offset, const uint8_t *p, size_t n)
{
	struct stream_check *c = ctx;
	if (offset != c->got || offset + n > c->want_len || memcmp(c->want + offset, p, n) != 0)
		abort();
	c->got += n;
	return c->stop_at == 0 || c->got < c->stop_at;
}

static void check_block(void *ctx, const struct inflate_resume *at)
{
	struct stream_check *c = ctx;
	if (at->window_len > sizeof(c->window) || at->out_offset > c->want_len ||
	    at->window_len > at->out_offset ||
	    memcmp(c->want + at->out_offset - at->window_len, at->window, at->window_len) != 0)
		abort();
	if (c->blocks++ == c->keep_block) {
		memcpy(c->window, at->window, at->window_len);
		c->mark = *at;
		c->mark.window = c->window;
	}
}

/* data is a raw DEFLATE stream the one-shot decoder took (out[0..n)). */
static void check_stream(const uint8_t *data, size_t size, const uint8_t *out, size_t n)
{
	static uint8_t work[WORK_CAP];
	static struct stream_check c;
	memset(&c, 0, sizeof(c));
	c.want = out;
	c.want_len = n;
	c.keep_block = size > 0 ? data[0] % 4 : 0;
	struct inflate_sink sink = {&c, check_put, check_block};
	struct inflate_resume start = {0, 0, NULL, 0};
	uint64_t until = size > 1 ? data[1] * (uint64_t)257 : 0;
	if (deflate_stream(data, size, &start, until, work, WORK_CAP, &sink) != DEFLATE_OK || c.got != n)
		abort();
	if (c.blocks <= c.keep_block)
		return;
	/* Resumed at the kept block start, stopping somewhere after it. */
	struct inflate_resume from = c.mark;
	c.got = from.out_offset;
	c.stop_at = until > from.out_offset ? until : 0;
	c.blocks = 0;
	c.keep_block = UINT32_MAX;
	int rc = deflate_stream(data, size, &from, until, work, WORK_CAP, &sink);
	if (rc != DEFLATE_OK && rc != DEFLATE_STOPPED)
		abort();
	if (rc == DEFLATE_OK && c.got != n)
		abort();
}

/* zlib's raw inflate as the judge: what it takes (output within OUT_CAP)
 * we take with the same bytes and input length; what it refuses we refuse. */
static void check_zlib(const uint8_t *data, size_t size, int rc, const uint8_t *out, size_t n,
		       size_t used)
{
	static uint8_t judge[OUT_CAP];
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, -15) != Z_OK)
		abort();
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)size;
	z.next_out = judge;
	z.avail_out = (uInt)OUT_CAP;
	int zrc = inflate(&z, Z_FINISH);
	size_t zn = z.total_out, zused = z.total_in;
	bool full = z.avail_out == 0;
	inflateEnd(&z);
	if (zrc == Z_STREAM_END) {
		if (rc != DEFLATE_OK || n != zn || used != zused || memcmp(out, judge, n) != 0)
			abort();
	} else if (!full && rc == DEFLATE_OK) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[OUT_CAP];
	size_t used = 0, n = 0;
	int rc = deflate_decompress(data, size, out, OUT_CAP, &used, &n);
	check_zlib(data, size, rc, out, n, used);
	if (rc == DEFLATE_OK) {
		if (used > size || n > OUT_CAP)
			abort();
		check_stream(data, size, out, n);
	}
	if (gzip_decompress(data, size, out, OUT_CAP, &used, &n) == DEFLATE_OK && (used > size || n > OUT_CAP))
		abort();
	if (zlib_decompress(data, size, out, OUT_CAP, &used, &n) == DEFLATE_OK && (used > size || n > OUT_CAP))
		abort();
	/* A buffer one byte short must say so, never overflow. */
	if (n > 0 && deflate_decompress(data, size, out, n - 1, NULL, &n) == DEFLATE_OK)
		abort();

	struct rt_buf packed = {0};
	if (gz_compress(data, size, GZ_LEVEL_FAST, &packed) != 0)
		abort();
	uint8_t *back = malloc(size + 1);
	if (!back || gzip_decompress(packed.data, packed.len, back, size + 1, &used, &n) != DEFLATE_OK ||
	    used != packed.len || n != size || (size && memcmp(back, data, size) != 0))
		abort();
	free(back);
	rt_buf_free(&packed);
	return 0;
}
