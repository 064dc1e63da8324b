/* Fuzz target: the DEFLATE, gzip and zlib decompressors (src/deflate/) on
 * arbitrary bytes must fail cleanly or stay inside their buffers, and a round
 * trip through our gzip compressor must give the input back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "deflate/deflate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_CAP ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[OUT_CAP];
	size_t used = 0, n = 0;
	if (deflate_decompress(data, size, out, OUT_CAP, &used, &n) == DEFLATE_OK &&
	    (used > size || n > OUT_CAP))
		abort();
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
