/* Fuzz target: the .eh_frame parser and CFA interpreter on arbitrary bytes:
 * the whole-image table and lookups across the covered range, the search
 * table built for in-place lookups and those lookups, and the same bytes
 * read as an .eh_frame_hdr in front of them.  A lookup's span must hold
 * the address looked up. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "unwind/cfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t base = 0x1000, limit = 0x100000;
	/* The section is pretended to live right after the code, as in a binary. */
	struct cfi_table *t = cfi_table_build(data, size, base + limit, base, limit);
	if (t != NULL) {
		for (uint64_t pc = base - 16; pc < base + limit + 16; pc += 61)
			(void)cfi_table_lookup(t, pc);
		cfi_table_free(t);
	}
	struct cfi_index ix;
	struct cfi_row row;
	if (cfi_index_build(&ix, data, size, base + limit, base, limit)) {
		for (uint64_t pc = base - 16; pc < base + limit + 16; pc += 613) {
			uint64_t lo = 0, hi = 0;
			(void)cfi_index_lookup_span(&ix, pc, &row, &lo, &hi);
			if (lo > pc || hi <= pc)
				abort();
		}
		cfi_index_free(&ix);
	}
	/* A header whose table points anywhere into the same bytes. */
	if (size >= 12 && cfi_index_from_hdr(&ix, data, size, base + limit, data, size,
					     base + limit + 4 + (uint64_t)(int64_t)(int32_t)(
						     (uint32_t)data[4] | (uint32_t)data[5] << 8 |
						     (uint32_t)data[6] << 16 | (uint32_t)data[7] << 24))) {
		for (uint64_t pc = base - 16; pc < base + limit + 16; pc += 613)
			(void)cfi_index_lookup(&ix, pc, &row);
	}
	return 0;
}
