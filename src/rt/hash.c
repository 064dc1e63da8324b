/* Hashing of byte strings for tables and identities (the word step is
 * rt_hash_mix, inline in rt.h). */
#include "rt/rt.h"

uint64_t rt_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		__builtin_memcpy(&w, b + i, sizeof(w)); /* one load, not a call */
		h = rt_hash_mix(h, w);
	}
	uint64_t tail = (uint64_t)n << 56;
	for (size_t k = 0; i + k < n; k++)
		tail |= (uint64_t)b[i + k] << (8 * k);
	return rt_hash_mix(h, tail);
}

uint32_t rt_hash_fold(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (uint32_t)h;
}
