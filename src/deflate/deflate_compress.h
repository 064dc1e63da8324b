/* The DEFLATE compressor's state, shared by deflate_compress.c (which owns
 * it) and gzip_compress.c (which wraps it in a gzip member).  Not a
 * contract for other folders: they use deflate.h. */
#ifndef STOWAWAY_DEFLATE_DEFLATE_COMPRESS_H
#define STOWAWAY_DEFLATE_DEFLATE_COMPRESS_H

#include "deflate/deflate.h"

#define WIN_BITS 15
#define WIN_SIZE (1u << WIN_BITS) /* DEFLATE's maximum distance */
#define WIN_MASK (WIN_SIZE - 1)
#define BUF_SIZE (2 * WIN_SIZE)   /* input buffer; positions fit in uint16_t */
#define BUF_PAD 320               /* match comparison reads up to 8 bytes past a match */
#define HASH_BYTES 4              /* shortest match the finder reports */
#define MAX_MATCH 258
#define MIN_LOOKAHEAD (MAX_MATCH + 8) /* keep this much input ahead unless finishing */
#define HASH_BITS 15               /* head[] entries: at most 1 << HASH_BITS */
#define HASH_MIN_BITS 10
#define HASH_SIZE (1u << HASH_BITS)
#define SYM_MAX 16384             /* symbols per block */

#define NUM_LITLEN 286  /* literal/length codes actually used (0..285) */
#define NUM_FIXED_LITLEN 288
#define NUM_LEN_CODES 29
#define NUM_DIST 30
#define NUM_CL 19       /* code-length alphabet */
#define MAX_CODE_BITS 15
#define MAX_CL_BITS 7
#define END_OF_BLOCK 256
#define STORED_MAX 65535u

struct level_config {
	uint16_t max_chain;    /* candidates examined per search */
	uint16_t good_len;     /* lazy: a previous match this long quarters the chain */
	uint16_t nice_len;     /* stop searching at a match this long */
	uint16_t lazy_limit;   /* lazy: do not search after a match this long; greedy: 0 */
	uint16_t insert_limit; /* greedy: hash the inside of matches up to this length
				* (lazy levels hash every position) */
};

/* Scratch for building one Huffman code. */
struct huff_work {
	uint64_t keys[NUM_LITLEN];        /* (frequency << 16) | symbol */
	uint64_t scratch[NUM_LITLEN];     /* for sorting keys */
	uint32_t weight[2 * NUM_LITLEN];
	uint16_t parent[2 * NUM_LITLEN];
	uint16_t depth[2 * NUM_LITLEN];
};

/* Per-block Huffman codes: bit-reversed canonical codes and their lengths. */
struct huff_code {
	uint16_t lit_code[NUM_FIXED_LITLEN];
	uint8_t lit_len[NUM_FIXED_LITLEN];
	uint16_t dist_code[NUM_DIST];
	uint8_t dist_len[NUM_DIST];
};

/* Run-length coded code lengths of a dynamic block header. */
struct header_plan {
	uint8_t tok_sym[NUM_LITLEN + NUM_DIST];
	uint8_t tok_extra[NUM_LITLEN + NUM_DIST];
	uint32_t ntok;
	uint32_t hlit, hdist, hclen;
	uint32_t cl_freq[NUM_CL];
	uint8_t cl_len[NUM_CL];
	uint16_t cl_code[NUM_CL];
	uint64_t bits; /* header size after the 3 block-type bits */
};

struct bit_writer {
	uint64_t acc;
	uint32_t nbits; /* < 8 between calls */
	uint8_t *p;
};

struct deflate_compressor {
	uint8_t window[BUF_SIZE + BUF_PAD];
	uint16_t head[HASH_SIZE];
	uint16_t prev[WIN_SIZE];
	uint16_t sym_dist[SYM_MAX]; /* 0: literal */
	uint8_t sym_lc[SYM_MAX];    /* literal byte, or match length - 3 */
	uint32_t lit_freq[NUM_FIXED_LITLEN];
	uint32_t dist_freq[NUM_DIST];
	uint8_t len_code[256];   /* match length - 3 -> length code index 0..28 */
	uint8_t dist_code[512];  /* see dist_code_of() */
	uint16_t len_base[NUM_LEN_CODES]; /* length - 3 at the start of each code */
	uint8_t len_extra[NUM_LEN_CODES];
	uint16_t dist_base[NUM_DIST];     /* distance - 1 at the start of each code */
	uint8_t dist_extra[NUM_DIST];
	uint32_t len_bits[256];  /* put_symbols: code | extra << code length, per length - 3 */
	uint8_t len_nbits[256];
	struct huff_code fixed;
	struct huff_code dyn;
	struct header_plan plan;
	struct huff_work work;

	struct level_config cfg;
	uint32_t hash_bits;   /* head[] in use: 1 << hash_bits entries */
	struct rt_buf *out;
	uint32_t win_end;     /* bytes of input in window[] */
	uint32_t pos;         /* next position to encode */
	int32_t block_start;  /* window position of the current block (< 0: slid out) */
	uint32_t block_len;   /* input bytes covered by the current block's symbols */
	uint32_t sym_count;
	uint32_t prev_len;    /* lazy: match found at pos - 1 (0 if none) */
	uint32_t prev_dist;
	bool pending;         /* lazy: window[pos - 1] is not yet encoded */
	bool finished;
	int error;
	struct bit_writer bw;
};

/* Prepares *s (any contents: a state an earlier stream used is reset with
 * the pages it touched, fresh memory need not be zero) for one DEFLATE
 * stream appended to *out at
 * `level` (1..9, checked by the caller).  `input_bytes` is the whole
 * input's size when known (0: unknown): a small input hashes into a table
 * about its size, so a profile of a few KiB touches a few pages of the
 * state, not all of head[]. */
int deflate_compressor_init(struct deflate_compressor *s, int level, struct rt_buf *out,
			    size_t input_bytes);
/* Appends n raw bytes to the output; only at a byte boundary (before the
 * first write or after finish). */
int deflate_compressor_put_bytes(struct deflate_compressor *s, const void *p, size_t n);
/* Compresses n bytes; 0 or the stream's first error (-ENOMEM, -EINVAL). */
int deflate_compressor_write(struct deflate_compressor *s, const void *p, size_t n);
/* Ends the stream with a last block and pads it to a byte boundary. */
int deflate_compressor_finish(struct deflate_compressor *s);

#endif
