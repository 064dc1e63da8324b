/* DEFLATE/gzip decoder (canonical Huffman decoding, one bit at a time, as
 * RFC 1951 describes it) and a fixed-Huffman gzip encoder. */
#include "cli/inflate.h"

#include <stdlib.h>
#include <string.h>

#define MAX_BITS 15
#define MAX_LITLEN_CODES 288
#define MAX_DIST_CODES 30

struct bit_reader {
	const unsigned char *in;
	size_t len;
	size_t pos;
	uint32_t bit_buf;
	unsigned bit_count;
};

/* Reads `need` bits (0..16), least significant first. */
static int get_bits(struct bit_reader *br, unsigned need, uint32_t *val)
{
	while (br->bit_count < need) {
		if (br->pos >= br->len)
			return cli_fail("compressed data is truncated");
		br->bit_buf |= (uint32_t)br->in[br->pos++] << br->bit_count;
		br->bit_count += 8;
	}
	*val = br->bit_buf & ((1u << need) - 1u);
	br->bit_buf >>= need;
	br->bit_count -= need;
	return 0;
}

struct huffman {
	uint16_t count[MAX_BITS + 1];        /* codes of each length */
	uint16_t symbol[MAX_LITLEN_CODES];   /* symbols ordered by code */
};

/* Builds a canonical code from code lengths; rejects over-subscribed sets.
 * Incomplete sets are allowed (RFC 1951 permits a single distance code);
 * decoding an unassigned code then fails. */
static int huffman_build(struct huffman *h, const uint8_t *lengths, unsigned n)
{
	uint16_t offsets[MAX_BITS + 1];
	memset(h->count, 0, sizeof(h->count));
	for (unsigned i = 0; i < n; i++)
		h->count[lengths[i]]++;
	int left = 1;
	for (unsigned len = 1; len <= MAX_BITS; len++) {
		left <<= 1;
		left -= h->count[len];
		if (left < 0)
			return cli_fail("compressed data has an over-subscribed Huffman code");
	}
	offsets[1] = 0;
	for (unsigned len = 1; len < MAX_BITS; len++)
		offsets[len + 1] = (uint16_t)(offsets[len] + h->count[len]);
	for (unsigned i = 0; i < n; i++)
		if (lengths[i] != 0)
			h->symbol[offsets[lengths[i]]++] = (uint16_t)i;
	return 0;
}

static int huffman_decode(struct bit_reader *br, const struct huffman *h, unsigned *sym)
{
	int code = 0, first = 0, index = 0;
	for (unsigned len = 1; len <= MAX_BITS; len++) {
		uint32_t bit;
		if (get_bits(br, 1, &bit) != 0)
			return -1;
		code |= (int)bit;
		int count = h->count[len];
		if (code - first < count) {
			*sym = h->symbol[index + (code - first)];
			return 0;
		}
		index += count;
		first += count;
		first <<= 1;
		code <<= 1;
	}
	return cli_fail("compressed data has an invalid Huffman code");
}

/* Length codes 257..285 and distance codes 0..29 (RFC 1951, 3.2.5). */
static const uint16_t length_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,
					 15, 17, 19, 23, 27, 31, 35, 43, 51,  59,
					 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
					 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,    2,    3,    4,    5,    7,     9,     13,
				       17,   25,   33,   49,   65,   97,    129,   193,
				       257,  385,  513,  769,  1025, 1537,  2049,  3073,
				       4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
				       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

struct inflate_out {
	struct cli_buf *buf;
	size_t stream_start; /* back references may not reach before this */
	size_t max_out;
};

static int out_reserve(struct inflate_out *o, size_t n)
{
	if (o->buf->len + n > o->max_out || o->buf->len + n < o->buf->len)
		return cli_fail("decompressed data exceeds %zu bytes", o->max_out);
	o->buf->data = xgrow(o->buf->data, &o->buf->cap, o->buf->len + n, 1);
	return 0;
}

static int inflate_stored(struct bit_reader *br, struct inflate_out *o)
{
	br->bit_buf = 0; /* discard the rest of the current byte */
	br->bit_count = 0;
	if (br->len - br->pos < 4)
		return cli_fail("compressed data is truncated");
	unsigned len = br->in[br->pos] | (unsigned)br->in[br->pos + 1] << 8;
	unsigned nlen = br->in[br->pos + 2] | (unsigned)br->in[br->pos + 3] << 8;
	br->pos += 4;
	if (len != (~nlen & 0xffffu))
		return cli_fail("compressed data has a corrupt stored block");
	if (br->len - br->pos < len)
		return cli_fail("compressed data is truncated");
	if (len == 0)
		return 0;
	if (out_reserve(o, len) != 0)
		return -1;
	memcpy(o->buf->data + o->buf->len, br->in + br->pos, len);
	o->buf->len += len;
	br->pos += len;
	return 0;
}

static int inflate_codes(struct bit_reader *br, struct inflate_out *o, const struct huffman *lit,
			 const struct huffman *dist)
{
	for (;;) {
		unsigned sym;
		if (huffman_decode(br, lit, &sym) != 0)
			return -1;
		if (sym < 256) {
			if (out_reserve(o, 1) != 0)
				return -1;
			o->buf->data[o->buf->len++] = (unsigned char)sym;
			continue;
		}
		if (sym == 256)
			return 0;
		sym -= 257;
		if (sym >= 29)
			return cli_fail("compressed data has an invalid length code");
		uint32_t extra;
		if (get_bits(br, length_extra[sym], &extra) != 0)
			return -1;
		size_t length = length_base[sym] + extra;
		unsigned dsym;
		if (huffman_decode(br, dist, &dsym) != 0)
			return -1;
		if (dsym >= 30)
			return cli_fail("compressed data has an invalid distance code");
		if (get_bits(br, dist_extra[dsym], &extra) != 0)
			return -1;
		size_t distance = dist_base[dsym] + extra;
		if (distance > o->buf->len - o->stream_start)
			return cli_fail("compressed data refers before its start");
		if (out_reserve(o, length) != 0)
			return -1;
		unsigned char *d = o->buf->data;
		size_t at = o->buf->len;
		for (size_t i = 0; i < length; i++) /* byte by byte: copies may overlap */
			d[at + i] = d[at + i - distance];
		o->buf->len += length;
	}
}

static int fixed_tables(struct huffman *lit, struct huffman *dist)
{
	uint8_t lengths[MAX_LITLEN_CODES];
	unsigned i = 0;
	for (; i < 144; i++)
		lengths[i] = 8;
	for (; i < 256; i++)
		lengths[i] = 9;
	for (; i < 280; i++)
		lengths[i] = 7;
	for (; i < MAX_LITLEN_CODES; i++)
		lengths[i] = 8;
	if (huffman_build(lit, lengths, MAX_LITLEN_CODES) != 0)
		return -1;
	for (i = 0; i < MAX_DIST_CODES; i++)
		lengths[i] = 5;
	return huffman_build(dist, lengths, MAX_DIST_CODES);
}

static int dynamic_tables(struct bit_reader *br, struct huffman *lit, struct huffman *dist)
{
	static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
	uint8_t lengths[MAX_LITLEN_CODES + MAX_DIST_CODES];
	uint32_t hlit, hdist, hclen;
	if (get_bits(br, 5, &hlit) != 0 || get_bits(br, 5, &hdist) != 0 || get_bits(br, 4, &hclen) != 0)
		return -1;
	hlit += 257;
	hdist += 1;
	hclen += 4;
	if (hlit > 286 || hdist > 30)
		return cli_fail("compressed data has bad code counts");
	memset(lengths, 0, sizeof(lengths));
	for (unsigned i = 0; i < hclen; i++) {
		uint32_t v;
		if (get_bits(br, 3, &v) != 0)
			return -1;
		lengths[order[i]] = (uint8_t)v;
	}
	struct huffman code_lengths;
	if (huffman_build(&code_lengths, lengths, 19) != 0)
		return -1;
	unsigned total = hlit + hdist, n = 0;
	while (n < total) {
		unsigned sym;
		if (huffman_decode(br, &code_lengths, &sym) != 0)
			return -1;
		if (sym < 16) {
			lengths[n++] = (uint8_t)sym;
			continue;
		}
		uint8_t value = 0;
		uint32_t repeat;
		if (sym == 16) {
			if (n == 0)
				return cli_fail("compressed data repeats a missing length");
			value = lengths[n - 1];
			if (get_bits(br, 2, &repeat) != 0)
				return -1;
			repeat += 3;
		} else if (sym == 17) {
			if (get_bits(br, 3, &repeat) != 0)
				return -1;
			repeat += 3;
		} else {
			if (get_bits(br, 7, &repeat) != 0)
				return -1;
			repeat += 11;
		}
		if (n + repeat > total)
			return cli_fail("compressed data has too many code lengths");
		memset(lengths + n, value, repeat);
		n += repeat;
	}
	if (lengths[256] == 0)
		return cli_fail("compressed data has no end-of-block code");
	if (huffman_build(lit, lengths, hlit) != 0)
		return -1;
	return huffman_build(dist, lengths + hlit, hdist);
}

int inflate_raw(const unsigned char *in, size_t len, size_t max_out, struct cli_buf *out,
		size_t *consumed)
{
	struct bit_reader br = {.in = in, .len = len};
	struct inflate_out o = {.buf = out, .stream_start = out->len, .max_out = max_out};
	struct huffman lit, dist;
	uint32_t last;
	do {
		uint32_t type;
		if (get_bits(&br, 1, &last) != 0 || get_bits(&br, 2, &type) != 0)
			return -1;
		int rc;
		if (type == 0) {
			rc = inflate_stored(&br, &o);
		} else if (type == 1) {
			rc = fixed_tables(&lit, &dist);
			if (rc == 0)
				rc = inflate_codes(&br, &o, &lit, &dist);
		} else if (type == 2) {
			rc = dynamic_tables(&br, &lit, &dist);
			if (rc == 0)
				rc = inflate_codes(&br, &o, &lit, &dist);
		} else {
			rc = cli_fail("compressed data has an invalid block type");
		}
		if (rc != 0)
			return -1;
	} while (!last);
	*consumed = br.pos; /* unused bits of the last byte are padding */
	return 0;
}

uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t len)
{
	static uint32_t table[256];
	static int table_ready;
	if (!table_ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		table_ready = 1;
	}
	crc = ~crc;
	for (size_t i = 0; i < len; i++)
		crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

int is_gzip(const unsigned char *in, size_t len)
{
	return len >= 2 && in[0] == 0x1f && in[1] == 0x8b;
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Skips a zero-terminated header field. */
static int skip_cstring(const unsigned char *in, size_t len, size_t *pos)
{
	const unsigned char *nul = memchr(in + *pos, 0, len - *pos);
	if (!nul)
		return cli_fail("gzip header is truncated");
	*pos = (size_t)(nul - in) + 1;
	return 0;
}

static int gunzip_member(const unsigned char *in, size_t len, size_t max_out, struct cli_buf *out,
			 size_t *used)
{
	enum { FHCRC = 2, FEXTRA = 4, FNAME = 8, FCOMMENT = 16 };
	if (len < 18 || !is_gzip(in, len))
		return cli_fail("not gzip data or truncated gzip header");
	if (in[2] != 8)
		return cli_fail("gzip compression method %u is not deflate", in[2]);
	unsigned flags = in[3];
	if (flags & 0xe0)
		return cli_fail("gzip header has reserved flags set");
	size_t pos = 10;
	if (flags & FEXTRA) {
		size_t xlen = in[pos] | (size_t)in[pos + 1] << 8;
		pos += 2;
		if (len - pos < xlen)
			return cli_fail("gzip header is truncated");
		pos += xlen;
	}
	if ((flags & FNAME) && skip_cstring(in, len, &pos) != 0)
		return -1;
	if ((flags & FCOMMENT) && skip_cstring(in, len, &pos) != 0)
		return -1;
	if (flags & FHCRC)
		pos += 2;
	if (pos > len)
		return cli_fail("gzip header is truncated");
	size_t start = out->len, consumed = 0;
	if (inflate_raw(in + pos, len - pos, max_out, out, &consumed) != 0)
		return -1;
	pos += consumed;
	if (len - pos < 8)
		return cli_fail("gzip trailer is truncated");
	/* out->data is NULL while nothing was ever produced. */
	uint32_t crc = out->len > start ? crc32_update(0, out->data + start, out->len - start) : 0;
	if (crc != le32(in + pos))
		return cli_fail("gzip CRC-32 mismatch (corrupt data)");
	if ((uint32_t)(out->len - start) != le32(in + pos + 4))
		return cli_fail("gzip length mismatch (corrupt data)");
	*used = pos + 8;
	return 0;
}

int gunzip(const unsigned char *in, size_t len, size_t max_out, struct cli_buf *out)
{
	size_t pos = 0;
	do {
		size_t used = 0;
		if (gunzip_member(in + pos, len - pos, max_out, out, &used) != 0)
			return -1;
		pos += used;
		/* Trailing zero padding after the last member is tolerated. */
		while (pos < len && in[pos] == 0)
			pos++;
	} while (pos < len);
	return 0;
}

/* ---- encoder ---- */

struct bit_writer {
	struct cli_buf *out;
	uint32_t bit_buf;
	unsigned bit_count;
};

static void put_bits(struct bit_writer *bw, uint32_t value, unsigned count)
{
	bw->bit_buf |= value << bw->bit_count;
	bw->bit_count += count;
	while (bw->bit_count >= 8) {
		unsigned char byte = (unsigned char)bw->bit_buf;
		buf_append(bw->out, &byte, 1);
		bw->bit_buf >>= 8;
		bw->bit_count -= 8;
	}
}

/* Huffman codes are sent most significant bit first. */
static void put_code(struct bit_writer *bw, uint32_t code, unsigned count)
{
	uint32_t reversed = 0;
	for (unsigned i = 0; i < count; i++)
		reversed |= ((code >> i) & 1u) << (count - 1 - i);
	put_bits(bw, reversed, count);
}

static void put_fixed_literal(struct bit_writer *bw, unsigned sym)
{
	if (sym < 144)
		put_code(bw, 0x30 + sym, 8);
	else if (sym < 256)
		put_code(bw, 0x190 + (sym - 144), 9);
	else if (sym < 280)
		put_code(bw, sym - 256, 7);
	else
		put_code(bw, 0xc0 + (sym - 280), 8);
}

static void put_match(struct bit_writer *bw, unsigned length, unsigned distance)
{
	unsigned li = 28;
	while (length_base[li] > length)
		li--;
	put_fixed_literal(bw, 257 + li);
	put_bits(bw, length - length_base[li], length_extra[li]);
	unsigned di = 29;
	while (dist_base[di] > distance)
		di--;
	put_code(bw, di, 5);
	put_bits(bw, distance - dist_base[di], dist_extra[di]);
}

#define HASH_BITS 15
#define WINDOW 32768u
#define MIN_MATCH 3u
#define MAX_MATCH 258u

void gzip_compress(const unsigned char *data, size_t len, struct cli_buf *out)
{
	static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
	buf_append(out, header, sizeof(header));
	struct bit_writer bw = {.out = out};
	put_bits(&bw, 1, 1); /* last block */
	put_bits(&bw, 1, 2); /* fixed Huffman */
	size_t *head = xmalloc(sizeof(size_t) << HASH_BITS);
	for (size_t i = 0; i < (size_t)1 << HASH_BITS; i++)
		head[i] = SIZE_MAX;
	size_t pos = 0;
	while (pos < len) {
		unsigned best_len = 0;
		size_t best_dist = 0;
		if (len - pos >= MIN_MATCH) {
			uint32_t h = ((uint32_t)data[pos] << 16 | (uint32_t)data[pos + 1] << 8 | data[pos + 2]) *
				     2654435761u >> (32 - HASH_BITS);
			size_t cand = head[h];
			head[h] = pos;
			if (cand != SIZE_MAX && pos - cand <= WINDOW) {
				size_t limit = len - pos < MAX_MATCH ? len - pos : MAX_MATCH;
				size_t n = 0;
				while (n < limit && data[cand + n] == data[pos + n])
					n++;
				if (n >= MIN_MATCH) {
					best_len = (unsigned)n;
					best_dist = pos - cand;
				}
			}
		}
		if (best_len) {
			put_match(&bw, best_len, (unsigned)best_dist);
			pos += best_len;
		} else {
			put_fixed_literal(&bw, data[pos]);
			pos++;
		}
	}
	free(head);
	put_fixed_literal(&bw, 256);
	if (bw.bit_count)
		put_bits(&bw, 0, 8 - bw.bit_count);
	unsigned char trailer[8];
	uint32_t crc = crc32_update(0, data, len);
	uint32_t size = (uint32_t)len;
	for (int i = 0; i < 4; i++) {
		trailer[i] = (unsigned char)(crc >> (8 * i));
		trailer[4 + i] = (unsigned char)(size >> (8 * i));
	}
	buf_append(out, trailer, sizeof(trailer));
}
