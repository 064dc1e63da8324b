/* Fuzz target: the /proc/self/maps parser on arbitrary text. */
#include <stddef.h>
#include <stdint.h>

#include "symbols/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct maps_entry e;
	size_t pos = 0;
	volatile uint64_t total = 0;
	while (maps_next((const char *)data, size, &pos, &e)) {
		if (e.end <= e.start || e.path < (const char *)data ||
		    e.path + e.path_len > (const char *)data + size)
			__builtin_trap();
		total += e.start + e.path_len;
	}
	return 0;
}
