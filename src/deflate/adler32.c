/* Adler-32 (RFC 1950, 8.2): two sums modulo 65521, reduced every 5552 bytes,
 * the most that cannot overflow 32 bits. */
#include "deflate/deflate.h"

#define ADLER_MOD 65521u
#define ADLER_CHUNK 5552u

uint32_t adler32_update(uint32_t adler, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t a = adler & 0xffffu, b = adler >> 16;
	while (n > 0) {
		size_t chunk = n < ADLER_CHUNK ? n : ADLER_CHUNK;
		n -= chunk;
		for (size_t i = 0; i < chunk; i++) {
			a += p[i];
			b += a;
		}
		p += chunk;
		a %= ADLER_MOD;
		b %= ADLER_MOD;
	}
	return b << 16 | a;
}
