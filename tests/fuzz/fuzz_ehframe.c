/* Fuzz target: the .eh_frame parser and CFA interpreter on arbitrary bytes,
 * then lookups across the covered range. */
#include <stddef.h>
#include <stdint.h>

#include "unwind/cfi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint64_t base = 0x1000, limit = 0x100000;
	/* The section is pretended to live right after the code, as in a binary. */
	struct cfi_table *t = cfi_table_build(data, size, base + limit, base, limit);
	if (t == NULL)
		return 0;
	for (uint64_t pc = base - 16; pc < base + limit + 16; pc += 61)
		(void)cfi_table_lookup(t, pc);
	cfi_table_free(t);
	return 0;
}
