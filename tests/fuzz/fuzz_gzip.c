/* Fuzz target: our gzip at every level, in chunks chosen by the input,
 * must inflate with zlib to exactly the input.  A second pass stretches the
 * input past the 64 KiB buffer (window slides, multi-block output).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "deflate/deflate.h"

static void die(const char *what, int level, size_t n)
{
	fprintf(stderr, "fuzz_gzip: %s (level %d, %zu bytes)\n", what, level, n);
	abort();
}

static void check_round_trip(const uint8_t *in, size_t n, int level, size_t chunk)
{
	struct rt_buf out = {0};
	struct gz_stream s;
	if (gz_init(&s, level, &out) != 0)
		die("gz_init", level, n);
	for (size_t off = 0; off < n; off += chunk) {
		size_t len = n - off < chunk ? n - off : chunk;
		if (gz_write(&s, in + off, len) != 0)
			die("gz_write", level, n);
	}
	if (gz_finish(&s) != 0)
		die("gz_finish", level, n);
	gz_destroy(&s);

	uint8_t *got = malloc(n + 1);
	if (!got)
		abort();
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit2(&z, 16 + 15) != Z_OK)
		abort();
	z.next_in = out.data;
	z.avail_in = (uInt)out.len;
	z.next_out = got;
	z.avail_out = (uInt)(n + 1);
	int rc = inflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END || z.total_out != n || z.avail_in != 0 || (n && memcmp(got, in, n) != 0)) {
		fprintf(stderr, "zlib rc=%d msg=%s out=%lu\n", rc, z.msg ? z.msg : "", z.total_out);
		die("round trip mismatch", level, n);
	}
	inflateEnd(&z);
	free(got);
	rt_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t chunk = size ? 1 + (size_t)data[0] * 37 : 1;
	for (int level = 1; level <= 9; level++)
		check_round_trip(data, size, level, level == 6 ? chunk : (size ? size : 1));

	/* For one input in four, stretch to 40-91 KB: copies of the input with a
	 * counter mixed in every 251 bytes, so long matches, literals and (past
	 * 64 KiB) window slides all occur. */
	if (size < 2 || data[1] % 4 != 0)
		return 0;
	size_t big = 40000 + (size_t)data[1] * 200;
	uint8_t *buf = malloc(big);
	if (!buf)
		abort();
	for (size_t i = 0; i < big; i++)
		buf[i] = (uint8_t)(data[i % size] + (i % 251 == 0 ? i / 251 : 0));
	check_round_trip(buf, big, 1 + data[0] % 9, chunk);
	free(buf);
	return 0;
}
