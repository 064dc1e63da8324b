/* CRC-32 (the gzip polynomial), eight table lookups per 8 bytes. */
#include "deflate/deflate.h"

#include "deflate/crc32_table.h"

uint32_t crc32_update(uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	const uint32_t(*t)[256] = crc32_table;
	crc = ~crc;
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;
		crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^
		      t[4][lo >> 24] ^ t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
		      t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n > 0) {
		crc = (crc >> 8) ^ t[0][(crc ^ *p) & 0xff];
		p++;
		n--;
	}
	return ~crc;
}
