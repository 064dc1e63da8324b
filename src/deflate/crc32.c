/* CRC-32 (the gzip polynomial), sixteen table lookups per 16 bytes: the
 * lookups of a step depend on the CRC only through its first four bytes,
 * so one step's latency is shared by sixteen bytes. */
#include "deflate/deflate.h"

#include "deflate/crc32_table.h"

uint32_t crc32_update(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	const uint32_t(*t)[256] = crc32_table;
	crc = ~crc;
	while (n >= 16) {
		uint32_t w0 = crc ^ rt_load_le32(p), w1 = rt_load_le32(p + 4), w2 = rt_load_le32(p + 8),
			 w3 = rt_load_le32(p + 12);
		crc = t[15][w0 & 0xff] ^ t[14][(w0 >> 8) & 0xff] ^ t[13][(w0 >> 16) & 0xff] ^
		      t[12][w0 >> 24] ^ t[11][w1 & 0xff] ^ t[10][(w1 >> 8) & 0xff] ^
		      t[9][(w1 >> 16) & 0xff] ^ t[8][w1 >> 24] ^ t[7][w2 & 0xff] ^
		      t[6][(w2 >> 8) & 0xff] ^ t[5][(w2 >> 16) & 0xff] ^ t[4][w2 >> 24] ^
		      t[3][w3 & 0xff] ^ t[2][(w3 >> 8) & 0xff] ^ t[1][(w3 >> 16) & 0xff] ^ t[0][w3 >> 24];
		p += 16;
		n -= 16;
	}
	while (n > 0) {
		crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xff];
		p++;
		n--;
	}
	return ~crc;
}
