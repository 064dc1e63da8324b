/* Fuzz target: the CLI's DEFLATE/gzip decoder on arbitrary bytes, and a
 * round trip through its gzip encoder that must give the input back. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inflate.h"
#include "cli/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cli_buf out = {0};
	size_t consumed = 0;
	if (inflate_raw(data, size, (size_t)1 << 20, &out, &consumed) == 0 && consumed > size)
		abort();
	out.len = 0;
	(void)gunzip(data, size, (size_t)1 << 20, &out);

	struct cli_buf packed = {0}, unpacked = {0};
	gzip_compress(data, size, &packed);
	if (gunzip(packed.data, packed.len, size + 1, &unpacked) != 0 || unpacked.len != size ||
	    (size && memcmp(unpacked.data, data, size) != 0))
		abort();
	buf_free(&out);
	buf_free(&packed);
	buf_free(&unpacked);
	return 0;
}
