/* Fuzz target: the demangler on arbitrary names, into a roomy and a tiny
 * output buffer (the result must be terminated and never overrun). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "demangle/demangle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct demangle_scratch scratch;
	static char name[DEMANGLE_MAX_INPUT + 16];
	static char out[8192];
	char small[24];
	if (size > DEMANGLE_MAX_INPUT + 8)
		size = DEMANGLE_MAX_INPUT + 8;
	/* Most inputs get a _Z or _R prefix so a parser sees them. */
	size_t at = 0;
	if (size > 0 && (data[0] & 3) != 0) {
		name[0] = '_';
		name[1] = (data[0] & 3) == 1 ? 'Z' : 'R';
		at = 2;
	}
	memcpy(name + at, data, size);
	name[at + size] = 0;
	size_t n = demangle(name, out, sizeof(out), &scratch);
	if (n >= sizeof(out) || strlen(out) != n)
		__builtin_trap();
	n = demangle(name, small, sizeof(small), &scratch);
	if (n >= sizeof(small) || strlen(small) != n)
		__builtin_trap();
	return 0;
}
