/* One in-place sort for every table we order: a heap sort, so it needs no
 * allocation, no recursion and at most 2 n log2 n comparisons whatever the
 * input.  Not stable.  And a radix sort of plain 64-bit keys. */
#include "rt/rt.h"

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
	while (size >= sizeof(uint64_t)) {
		uint64_t x, y;
		__builtin_memcpy(&x, a, sizeof(x));
		__builtin_memcpy(&y, b, sizeof(y));
		__builtin_memcpy(a, &y, sizeof(y));
		__builtin_memcpy(b, &x, sizeof(x));
		a += sizeof(x);
		b += sizeof(x);
		size -= sizeof(x);
	}
	while (size--) {
		unsigned char t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

/* Moves element `root` down the heap of the first n elements.  A heap of n
 * elements is under 64 levels deep, so the loop is bounded. */
static void sift_down(unsigned char *base, size_t root, size_t n, size_t size, rt_sort_before before)
{
	for (int level = 0; level < 64; level++) {
		size_t child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && before(base + child * size, base + (child + 1) * size))
			child++;
		if (!before(base + root * size, base + child * size))
			return;
		swap_bytes(base + root * size, base + child * size, size);
		root = child;
	}
}

void rt_sort(void *base, size_t n, size_t size, rt_sort_before before)
{
	unsigned char *a = base;
	if (n < 2 || size == 0)
		return;
	for (size_t i = n / 2; i-- > 0;)
		sift_down(a, i, n, size, before);
	for (size_t end = n; end-- > 1;) {
		swap_bytes(a, a + end * size, size);
		sift_down(a, 0, end, size, before);
	}
}

void rt_sort_u64(uint64_t *v, size_t n, uint64_t *scratch)
{
	size_t count[256];
	uint64_t *from = v, *to = scratch;
	if (n < 2)
		return;
	for (uint32_t shift = 0; shift < 64; shift += 8) {
		rt_memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(from[i] >> shift) & 255]++;
		if (count[(from[0] >> shift) & 255] == n)
			continue; /* one digit for all: the order stands */
		size_t sum = 0;
		for (uint32_t d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[(from[i] >> shift) & 255]++] = from[i];
		uint64_t *t = from;
		from = to;
		to = t;
	}
	if (from != v)
		rt_memcpy(v, from, n * sizeof(*v));
}
