/* Adler-32 (RFC 1950, 8.2): two sums modulo 65521, reduced every 5552 bytes,
 * the most that cannot overflow 32 bits.  Eight bytes take one step: in a
 * word's four 16-bit lanes of even and of odd bytes, one multiplication
 * sums the bytes and two weight them by their distance from the word's end
 * (8 for the first byte .. 1 for the last), what the running sum b gains
 * from them; no lane can carry (at most 255 * 20 < 2^16). */
#include "deflate/deflate.h"

#define ADLER_MOD 65521u
#define ADLER_CHUNK 5552u /* a multiple of 8 */
#define LANES 0x00ff00ff00ff00ffull
#define LANE_SUM 0x0001000100010001ull
#define WEIGHT_EVEN 0x0008000600040002ull /* bytes 0, 2, 4, 6: weights 8, 6, 4, 2 */
#define WEIGHT_ODD 0x0007000500030001ull  /* bytes 1, 3, 5, 7: weights 7, 5, 3, 1 */

uint32_t adler32_update(uint32_t adler, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint32_t a = adler & 0xffffu, b = adler >> 16;
	while (n > 0) {
		size_t chunk = n < ADLER_CHUNK ? n : ADLER_CHUNK;
		n -= chunk;
		for (; chunk >= sizeof(uint64_t); chunk -= sizeof(uint64_t), p += sizeof(uint64_t)) {
			uint64_t w = rt_load_le64(p);
			uint64_t even = w & LANES, odd = (w >> 8) & LANES;
			b += 8u * a + (uint32_t)((even * WEIGHT_EVEN + odd * WEIGHT_ODD) >> 48);
			a += (uint32_t)(((even + odd) * LANE_SUM) >> 48);
		}
		for (; chunk > 0; chunk--) {
			a += *p++;
			b += a;
		}
		a %= ADLER_MOD;
		b %= ADLER_MOD;
	}
	return b << 16 | a;
}
