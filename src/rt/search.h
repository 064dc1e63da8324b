/* The one binary search over our sorted tables (address ranges, line rows,
 * units, symbols).  Pure and async-signal-safe. */
#ifndef STOWAWAY_RT_SEARCH_H
#define STOWAWAY_RT_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/* In a table of n elements of `size` bytes, sorted by the uint64_t field at
 * byte `offset` of each element: the number of leading elements whose field
 * is <= key, that is the index of the first element whose field is greater
 * (n when there is none).  At most 33 steps for any n.  Inline, so that the
 * caller's constant size and offset fold into plain loads. */
static inline uint32_t rt_upper_bound(const void *table, uint32_t n, size_t size, size_t offset,
				      uint64_t key)
{
	uint32_t lo = 0, hi = n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t v;
		__builtin_memcpy(&v, (const unsigned char *)table + (size_t)mid * size + offset, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
