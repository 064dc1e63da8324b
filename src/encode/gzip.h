/* gzip (RFC 1952) around our own DEFLATE (RFC 1951) compressor.
 *
 * Why our own: the library is freestanding (no zlib, no libc), and profiles
 * must be gzip-compressed before upload.  The compressor uses LZ77 with hash
 * chains of bounded depth (lazy matching from level 4), and per block picks
 * the cheapest of dynamic Huffman (length-limited canonical codes), fixed
 * Huffman or stored.  A block ends after a bounded number of symbols.
 *
 * Memory: one stream holds gz_state_bytes() (about 260 KiB) of whole pages,
 * allocated once in gz_init; gz_write/gz_finish never allocate except to grow
 * the caller's output buffer.  Not signal-safe.  A stream is used by one
 * thread at a time; distinct streams are independent.
 *
 * Errors: functions return 0 or a negative errno value (-EINVAL for a bad
 * level or a call after gz_finish, -ENOMEM when the state or the output
 * buffer cannot grow).  After an error the stream stays failed and every
 * later call returns the same error; gz_destroy is still required.
 */
#ifndef STOWAWAY_ENCODE_GZIP_H
#define STOWAWAY_ENCODE_GZIP_H

#include "rt/rt.h"

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
