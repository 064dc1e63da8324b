/* DEFLATE (RFC 1951) and its gzip (RFC 1952) and zlib (RFC 1950) wrappers,
 * with the CRC-32 and Adler-32 checksums they carry.
 *
 * Laid out as libdeflate lays it out: one file per piece (crc32.c,
 * adler32.c, deflate_compress.c, deflate_decompress.c, gzip_compress.c,
 * gzip_decompress.c, zlib_decompress.c) behind this one header.  The code is
 * freestanding (rt/ only) and is linked by both the library and the CLI.
 *
 * Why our own: the library is freestanding (no zlib, no libc), profiles
 * must be gzip-compressed before upload, and the CLI reads gzip profiles and
 * compressed ELF sections without zlib.
 */
#ifndef STOWAWAY_DEFLATE_DEFLATE_H
#define STOWAWAY_DEFLATE_DEFLATE_H

#include "rt/rt.h"

/* ---- checksums [signal-safe: no state, no allocation] ---- */

/* CRC-32 as gzip computes it.  Start with crc = 0; feed chunks in order. */
uint32_t crc32_update(uint32_t crc, const void *p, size_t n);
/* Adler-32 as zlib computes it.  Start with adler = 1. */
uint32_t adler32_update(uint32_t adler, const void *p, size_t n);

/* ---- decompression [signal-safe: no state, no allocation] ----
 *
 * Each decompressor reads one stream from in[0..in_len) and writes the
 * whole decompressed data to out[0..out_cap); back references never reach
 * before `out`.  Malformed or truncated input returns a negative
 * deflate_status and never reads or writes out of bounds.  Output larger
 * than out_cap returns DEFLATE_NO_SPACE (a caller with an unknown size may
 * retry with a larger buffer).  On success *in_used (may be NULL) is the
 * number of input bytes the stream occupied (a gzip or zlib stream: with its
 * trailer) and *out_len the number of bytes written; bytes of out past
 * *out_len may have been written too (a match is copied 8 bytes at a time).
 * Stack use is under 9 KiB (the decode tables: 7 KiB). */
enum deflate_status {
	DEFLATE_STOPPED = 1,            /* deflate_stream: the sink asked to stop */
	DEFLATE_OK = 0,
	DEFLATE_TRUNCATED = -1,         /* the input ends inside the stream */
	DEFLATE_NO_SPACE = -2,          /* the output does not fit in out_cap */
	DEFLATE_BAD_BLOCK_TYPE = -3,
	DEFLATE_BAD_STORED_LENGTH = -4,
	DEFLATE_BAD_CODE_COUNTS = -5,
	DEFLATE_BAD_CODE_LENGTHS = -6,  /* repeat of nothing, too many lengths, or an
					 * incomplete code zlib would reject too */
	DEFLATE_NO_END_OF_BLOCK = -7,
	DEFLATE_OVERSUBSCRIBED = -8,    /* a Huffman code with too many codes */
	DEFLATE_BAD_CODE = -9,          /* a bit pattern no symbol has */
	DEFLATE_BAD_LENGTH_CODE = -10,
	DEFLATE_BAD_DISTANCE_CODE = -11,
	DEFLATE_BAD_DISTANCE = -12,     /* a back reference before the start */
	DEFLATE_BAD_HEADER = -13,       /* gzip or zlib header */
	DEFLATE_BAD_CHECKSUM = -14,     /* gzip CRC-32 or zlib Adler-32 */
	DEFLATE_BAD_SIZE = -15,         /* gzip ISIZE */
};

/* A raw DEFLATE stream. */
int deflate_decompress(const void *in, size_t in_len, void *out, size_t out_cap, size_t *in_used,
		       size_t *out_len);
/* One gzip member; its CRC-32 and length are checked. */
int gzip_decompress(const void *in, size_t in_len, void *out, size_t out_cap, size_t *in_used,
		    size_t *out_len);
/* One zlib stream (as in ELF SHF_COMPRESSED sections with ELFCOMPRESS_ZLIB):
 * CM 8, no preset dictionary; its Adler-32 is checked. */
int zlib_decompress(const void *in, size_t in_len, void *out, size_t out_cap, size_t *in_used,
		    size_t *out_len);
/* True when in[0..len) starts with a zlib header zlib_decompress accepts
 * (the DEFLATE body then starts at in + 2). */
bool zlib_header_ok(const void *in, size_t len);
/* Streaming a raw DEFLATE stream through a bounded window, from its start
 * or from a point a previous pass reported, so that parts of a large
 * stream can be decoded without holding all of it. */
struct inflate_resume {
	uint64_t in_bit;       /* bit position in the input where a block starts */
	uint64_t out_offset;   /* output offset of that point */
	const uint8_t *window; /* the up to 32 KiB of output before it */
	size_t window_len;
};
struct inflate_sink {
	void *ctx;
	/* Takes output bytes [offset, offset + n), in order; false stops. */
	bool (*put)(void *ctx, uint64_t offset, const uint8_t *p, size_t n);
	/* Where each block after the first starts (NULL: not wanted); the
	 * window is valid during the call only. */
	void (*block)(void *ctx, const struct inflate_resume *at);
};
/* Decodes in[0..in_len) from `from` ({0, 0, NULL, 0}: the stream's start)
 * through work[0..work_cap) (at least 64 KiB), passing the output to
 * sink->put whenever the window fills and, once, as soon as the output
 * reaches offset `until` (0: no such point), so a reader that wants bytes
 * up to there can stop without more decoding.  DEFLATE_OK at the end of
 * the stream, DEFLATE_STOPPED when put asked to stop, else the error.  No
 * allocation. */
int deflate_stream(const void *in, size_t in_len, const struct inflate_resume *from, uint64_t until,
		   uint8_t *work, size_t work_cap, const struct inflate_sink *sink);
/* True when in[0..len) starts with the gzip magic bytes. */
bool gzip_is_gzip(const void *in, size_t len);
/* The ISIZE field of a gzip member that ends at in[len] (its trailer's last
 * four bytes): the member's decompressed size modulo 2^32, a size hint.  0
 * when len < 18. */
uint32_t gzip_trailer_size(const void *in, size_t len);
/* A one-line English description of a deflate_status, e.g. "compressed
 * data is truncated". */
const char *deflate_status_text(int status);

/* ---- gzip compression ----
 *
 * LZ77 with hash chains of bounded depth (lazy matching from level 4); each
 * block is the cheapest of dynamic Huffman (length-limited canonical codes),
 * fixed Huffman or stored.  A block ends after a bounded number of symbols.
 *
 * Memory: one stream holds gz_state_bytes() (about 250 KiB), one large
 * rt_malloc block allocated in gz_init (inside an rt_heap_keep scope, the
 * block a finished stream freed, its pages already faulted in; a state is
 * reset, not assumed zero); gz_write/gz_finish never allocate except to grow
 * the caller's output buffer.  Not signal-safe.  A stream is used by one
 * thread at a time; distinct streams are independent.
 *
 * Errors: functions return 0 or a negative errno value (-EINVAL for a bad
 * level or a call after gz_finish, -ENOMEM when the state or the output
 * buffer cannot grow).  After an error the stream stays failed and every
 * later call returns the same error; gz_destroy is still required. */

/* Levels 1..9 as in gzip.  1 is greedy with short chains (fastest),
 * 6 (the default) is tuned for pprof bodies: close to `gzip -6` in size and
 * much faster; 9 searches hardest. */
enum {
	GZ_LEVEL_FAST = 1,
	GZ_LEVEL_DEFAULT = 6,
	GZ_LEVEL_BEST = 9,
};

struct gz_state;

/* A compression stream appending one gzip member to *out. */
struct gz_stream {
	struct gz_state *state; /* owned; NULL before init and after destroy */
};

/* Allocates the state and appends the 10-byte gzip header to *out.  `out`
 * must stay valid until gz_finish; the caller may consume and rt_buf_reset()
 * it between calls (only bytes already appended are final). */
int gz_init(struct gz_stream *s, int level, struct rt_buf *out);
/* Compresses n bytes (n may be 0, any chunk size). */
int gz_write(struct gz_stream *s, const void *p, size_t n);
/* Ends the DEFLATE stream and appends the CRC-32 and ISIZE trailer. */
int gz_finish(struct gz_stream *s);
/* Releases the state; safe on a zeroed, failed or finished stream. */
void gz_destroy(struct gz_stream *s);

/* One-shot: appends the whole gzip member of in[0..n) to *out. */
int gz_compress(const void *in, size_t n, int level, struct rt_buf *out);

/* Bytes of memory one stream holds (for memory budgets and tests). */
size_t gz_state_bytes(void);

#endif
