/* DEFLATE (RFC 1951) and gzip (RFC 1952) decoding and a small gzip encoder,
 * written for the CLI so the static binary needs no zlib.  The decoder is
 * defensive: malformed or truncated input returns -1 with cli_err set, never
 * reads or writes out of bounds, and output is capped (decompression bombs). */
#ifndef STOWAWAY_CLI_INFLATE_H
#define STOWAWAY_CLI_INFLATE_H

#include <stddef.h>
#include <stdint.h>

#include "cli/util.h"

/* Raw DEFLATE stream in[0..len) appended to out (at most max_out bytes in
 * out).  *consumed is set to the number of input bytes used. */
int inflate_raw(const unsigned char *in, size_t len, size_t max_out, struct cli_buf *out,
		size_t *consumed);

/* One or more concatenated gzip members; each CRC-32 and length is checked. */
int gunzip(const unsigned char *in, size_t len, size_t max_out, struct cli_buf *out);

/* True when the data starts with the gzip magic bytes. */
int is_gzip(const unsigned char *in, size_t len);

/* Appends a gzip member holding data[0..len) (fixed-Huffman DEFLATE with a
 * greedy LZ77 match finder: small and fast, compresses pprof well). */
void gzip_compress(const unsigned char *data, size_t len, struct cli_buf *out);

uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t len);

#endif
