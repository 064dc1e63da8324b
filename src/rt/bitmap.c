/* Bitmaps of table slots in use (rt.h). */
#include "rt/rt.h"

int rt_bitmap_next(const atomic_ullong *words, int nwords, int from)
{
	if (from < 0)
		from = 0;
	for (int word = from / 64; word < nwords; word++) {
		uint64_t bits = atomic_load_explicit(&words[word], memory_order_relaxed);
		if (word == from / 64)
			bits &= ~0ull << (from % 64);
		if (bits)
			return word * 64 + __builtin_ctzll(bits);
	}
	return -1;
}
