/* DEFLATE decoder: canonical Huffman codes as RFC 1951 describes them, the
 * codes of up to FAST_BITS bits found by one table lookup and longer ones
 * one bit at a time, into a caller-sized output buffer (or, streaming,
 * through a window).  No state outside the call, no allocation: safe in a
 * signal handler. */
#include "deflate/deflate.h"

#include "rt/rt.h"

#define MAX_BITS 15
#define MAX_LITLEN_CODES 288
#define MAX_DIST_CODES 30
#define NUM_LENGTH_CODES 29
#define NUM_CODE_LENGTH_CODES 19
#define END_OF_BLOCK 256
#define FAST_BITS 9

struct bit_reader {
	const uint8_t *in;
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
			return DEFLATE_TRUNCATED;
		br->bit_buf |= (uint32_t)br->in[br->pos++] << br->bit_count;
		br->bit_count += 8;
	}
	*val = br->bit_buf & ((1u << need) - 1u);
	br->bit_buf >>= need;
	br->bit_count -= need;
	return DEFLATE_OK;
}

struct huffman {
	uint16_t count[MAX_BITS + 1];      /* codes of each length */
	uint16_t symbol[MAX_LITLEN_CODES]; /* symbols ordered by code */
	/* By the next FAST_BITS input bits: symbol | length << 9 of a code of
	 * at most FAST_BITS bits starting there, 0 if the code is longer. */
	uint16_t fast[1u << FAST_BITS];
};

/* Makes at least 24 bits available when the input has them. */
static void refill(struct bit_reader *br)
{
	while (br->bit_count <= 24 && br->pos < br->len) {
		br->bit_buf |= (uint32_t)br->in[br->pos++] << br->bit_count;
		br->bit_count += 8;
	}
}

/* Fills h->fast from code lengths (the canonical codes, bit-reversed as
 * DEFLATE sends them least significant bit first). */
static void huffman_fast(struct huffman *h, const uint8_t *lengths, unsigned n)
{
	uint16_t next[MAX_BITS + 1];
	rt_memset(h->fast, 0, sizeof(h->fast));
	unsigned code = 0;
	next[0] = 0;
	for (unsigned len = 1; len <= MAX_BITS; len++) {
		/* count[0] counts unused symbols, which take no codes. */
		code = (code + (len > 1 ? h->count[len - 1] : 0u)) << 1;
		next[len] = (uint16_t)code;
	}
	for (unsigned sym = 0; sym < n; sym++) {
		unsigned len = lengths[sym];
		if (len == 0)
			continue;
		unsigned c = next[len]++;
		if (len > FAST_BITS)
			continue;
		unsigned rev = 0;
		for (unsigned i = 0; i < len; i++)
			rev |= ((c >> i) & 1u) << (len - 1 - i);
		for (unsigned k = rev; k < (1u << FAST_BITS); k += 1u << len)
			h->fast[k] = (uint16_t)(sym | len << 9);
	}
}

/* Builds a canonical code from code lengths; rejects over-subscribed sets.
 * Incomplete sets are allowed (RFC 1951 permits a single distance code);
 * decoding an unassigned code then fails. */
static int huffman_build(struct huffman *h, const uint8_t *lengths, unsigned n)
{
	uint16_t offsets[MAX_BITS + 1];
	rt_memset(h->count, 0, sizeof(h->count));
	for (unsigned i = 0; i < n; i++)
		h->count[lengths[i]]++;
	int left = 1;
	for (unsigned len = 1; len <= MAX_BITS; len++) {
		left <<= 1;
		left -= h->count[len];
		if (left < 0)
			return DEFLATE_OVERSUBSCRIBED;
	}
	offsets[1] = 0;
	for (unsigned len = 1; len < MAX_BITS; len++)
		offsets[len + 1] = (uint16_t)(offsets[len] + h->count[len]);
	for (unsigned i = 0; i < n; i++)
		if (lengths[i] != 0)
			h->symbol[offsets[lengths[i]]++] = (uint16_t)i;
	huffman_fast(h, lengths, n);
	return DEFLATE_OK;
}

static int huffman_decode(struct bit_reader *br, const struct huffman *h, unsigned *sym)
{
	if (br->bit_count < FAST_BITS)
		refill(br);
	uint16_t e = h->fast[br->bit_buf & ((1u << FAST_BITS) - 1u)];
	if (e != 0 && (unsigned)(e >> 9) <= br->bit_count) {
		br->bit_buf >>= e >> 9;
		br->bit_count -= e >> 9;
		*sym = e & 0x1ffu;
		return DEFLATE_OK;
	}
	int code = 0, first = 0, index = 0;
	for (unsigned len = 1; len <= MAX_BITS; len++) {
		uint32_t bit;
		int rc = get_bits(br, 1, &bit);
		if (rc != DEFLATE_OK)
			return rc;
		code |= (int)bit;
		int count = h->count[len];
		if (code - first < count) {
			*sym = h->symbol[index + (code - first)];
			return DEFLATE_OK;
		}
		index += count;
		first += count;
		first <<= 1;
		code <<= 1;
	}
	return DEFLATE_BAD_CODE;
}

/* Length codes 257..285 and distance codes 0..29 (RFC 1951, 3.2.5). */
static const uint16_t length_base[NUM_LENGTH_CODES] = {
	3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27,
	31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[NUM_LENGTH_CODES] = {
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[MAX_DIST_CODES] = {
	1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
	193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[MAX_DIST_CODES] = {
	0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

struct inflate_out {
	uint8_t *data;
	size_t len;
	size_t cap;
	/* Streaming (deflate_stream): data is a window; bytes before `passed`
	 * went to the sink already and data[0] is output byte `base`. */
	const struct inflate_sink *sink;
	uint64_t base;
	size_t passed;
	uint64_t until; /* streaming: output offset at which to hand bytes over at the latest */
	bool stopped;
};

/* Where the output must stop for make_room next: the buffer's end, or
 * earlier when the sink wants the bytes up to `until` first (the output
 * length itself once `until` is reached). */
static size_t out_limit(const struct inflate_out *o)
{
	if (o->sink == NULL || o->until == 0)
		return o->cap;
	uint64_t want = o->until - o->base;
	if (want <= o->len)
		return o->len;
	return want < o->cap ? (size_t)want : o->cap;
}

#define WINDOW_BYTES 32768u

/* Streaming: hands the bytes not yet passed to the sink and keeps the last
 * 32 KiB (what back references may reach) at the front of the window.
 * Non-streaming output has no room to make. */
static int make_room(struct inflate_out *o, size_t need)
{
	if (o->sink == NULL)
		return DEFLATE_NO_SPACE;
	if (o->until != 0 && o->base + o->len < o->until && o->cap - o->len >= need)
		return DEFLATE_OK; /* a copy that crosses `until`: handed over after it */
	if (o->until != 0 && o->base + o->len >= o->until) {
		/* Reached `until`: hand the bytes over, keep them as the window. */
		o->until = 0;
		if (o->len > o->passed && !o->sink->put(o->sink->ctx, o->base + o->passed,
							  o->data + o->passed, o->len - o->passed)) {
			o->stopped = true;
			return DEFLATE_STOPPED;
		}
		o->passed = o->len;
		if (o->cap - o->len >= need)
			return DEFLATE_OK;
	}
	if (o->len > o->passed &&
	    !o->sink->put(o->sink->ctx, o->base + o->passed, o->data + o->passed, o->len - o->passed)) {
		o->stopped = true;
		return DEFLATE_STOPPED;
	}
	size_t keep = o->len < WINDOW_BYTES ? o->len : WINDOW_BYTES;
	rt_memmove(o->data, o->data + o->len - keep, keep);
	o->base += o->len - keep;
	o->len = keep;
	o->passed = keep;
	return o->cap - o->len >= need ? DEFLATE_OK : DEFLATE_NO_SPACE;
}

static int inflate_stored(struct bit_reader *br, struct inflate_out *o)
{
	/* Discard the rest of the current byte; whole bytes read ahead go back. */
	br->pos -= br->bit_count / 8;
	br->bit_buf = 0;
	br->bit_count = 0;
	if (br->len - br->pos < 4)
		return DEFLATE_TRUNCATED;
	unsigned len = br->in[br->pos] | (unsigned)br->in[br->pos + 1] << 8;
	unsigned nlen = br->in[br->pos + 2] | (unsigned)br->in[br->pos + 3] << 8;
	br->pos += 4;
	if (len != (~nlen & 0xffffu))
		return DEFLATE_BAD_STORED_LENGTH;
	if (br->len - br->pos < len)
		return DEFLATE_TRUNCATED;
	while (len > 0) {
		if (o->len == out_limit(o) || (o->sink == NULL && o->cap - o->len < len)) {
			int rc = make_room(o, 1);
			if (rc != DEFLATE_OK)
				return rc;
		}
		size_t n = out_limit(o) - o->len < len ? out_limit(o) - o->len : len;
		rt_memcpy(o->data + o->len, br->in + br->pos, n);
		o->len += n;
		br->pos += n;
		len -= (unsigned)n;
	}
	return DEFLATE_OK;
}

static int inflate_codes(struct bit_reader *br, struct inflate_out *o, const struct huffman *lit,
			 const struct huffman *dist)
{
	for (;;) {
		unsigned sym;
		int rc = huffman_decode(br, lit, &sym);
		if (rc != DEFLATE_OK)
			return rc;
		if (sym < 256) {
			if (o->len == out_limit(o) && (rc = make_room(o, 1)) != DEFLATE_OK)
				return rc;
			o->data[o->len++] = (uint8_t)sym;
			continue;
		}
		if (sym == END_OF_BLOCK)
			return DEFLATE_OK;
		sym -= 257;
		if (sym >= NUM_LENGTH_CODES)
			return DEFLATE_BAD_LENGTH_CODE;
		uint32_t extra;
		rc = get_bits(br, length_extra[sym], &extra);
		if (rc != DEFLATE_OK)
			return rc;
		size_t length = length_base[sym] + extra;
		unsigned dsym;
		rc = huffman_decode(br, dist, &dsym);
		if (rc != DEFLATE_OK)
			return rc;
		if (dsym >= MAX_DIST_CODES)
			return DEFLATE_BAD_DISTANCE_CODE;
		rc = get_bits(br, dist_extra[dsym], &extra);
		if (rc != DEFLATE_OK)
			return rc;
		size_t distance = dist_base[dsym] + extra;
		if (distance > o->len)
			return DEFLATE_BAD_DISTANCE;
		if (out_limit(o) - o->len < length && (rc = make_room(o, length)) != DEFLATE_OK)
			return rc;
		uint8_t *d = o->data + o->len;
		const uint8_t *from = d - distance;
		for (size_t i = 0; i < length; i++) /* byte by byte: copies may overlap */
			d[i] = from[i];
		o->len += length;
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
	int rc = huffman_build(lit, lengths, MAX_LITLEN_CODES);
	if (rc != DEFLATE_OK)
		return rc;
	for (i = 0; i < MAX_DIST_CODES; i++)
		lengths[i] = 5;
	return huffman_build(dist, lengths, MAX_DIST_CODES);
}

static int dynamic_tables(struct bit_reader *br, struct huffman *lit, struct huffman *dist)
{
	static const uint8_t order[NUM_CODE_LENGTH_CODES] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
							    11, 4,  12, 3, 13, 2, 14, 1, 15};
	uint8_t lengths[MAX_LITLEN_CODES + MAX_DIST_CODES];
	uint32_t hlit, hdist, hclen;
	int rc = get_bits(br, 5, &hlit);
	if (rc == DEFLATE_OK)
		rc = get_bits(br, 5, &hdist);
	if (rc == DEFLATE_OK)
		rc = get_bits(br, 4, &hclen);
	if (rc != DEFLATE_OK)
		return rc;
	hlit += 257;
	hdist += 1;
	hclen += 4;
	if (hlit > 286 || hdist > 30)
		return DEFLATE_BAD_CODE_COUNTS;
	rt_memset(lengths, 0, sizeof(lengths));
	for (unsigned i = 0; i < hclen; i++) {
		uint32_t v;
		rc = get_bits(br, 3, &v);
		if (rc != DEFLATE_OK)
			return rc;
		lengths[order[i]] = (uint8_t)v;
	}
	struct huffman code_lengths;
	rc = huffman_build(&code_lengths, lengths, NUM_CODE_LENGTH_CODES);
	if (rc != DEFLATE_OK)
		return rc;
	unsigned total = hlit + hdist, n = 0;
	while (n < total) {
		unsigned sym;
		rc = huffman_decode(br, &code_lengths, &sym);
		if (rc != DEFLATE_OK)
			return rc;
		if (sym < 16) {
			lengths[n++] = (uint8_t)sym;
			continue;
		}
		uint8_t value = 0;
		uint32_t repeat;
		if (sym == 16) {
			if (n == 0)
				return DEFLATE_BAD_CODE_LENGTHS;
			value = lengths[n - 1];
			rc = get_bits(br, 2, &repeat);
			repeat += 3;
		} else if (sym == 17) {
			rc = get_bits(br, 3, &repeat);
			repeat += 3;
		} else {
			rc = get_bits(br, 7, &repeat);
			repeat += 11;
		}
		if (rc != DEFLATE_OK)
			return rc;
		if (n + repeat > total)
			return DEFLATE_BAD_CODE_LENGTHS;
		rt_memset(lengths + n, value, repeat);
		n += repeat;
	}
	if (lengths[END_OF_BLOCK] == 0)
		return DEFLATE_NO_END_OF_BLOCK;
	rc = huffman_build(lit, lengths, hlit);
	if (rc != DEFLATE_OK)
		return rc;
	return huffman_build(dist, lengths + hlit, hdist);
}

/* Decodes blocks until the last one.  Streaming, the sink hears where each
 * block after the first starts. */
static int inflate_blocks(struct bit_reader *br, struct inflate_out *o)
{
	struct huffman lit, dist;
	uint32_t last = 0;
	bool first = true;
	do {
		if (o->sink != NULL && !first && o->sink->block != NULL) {
			size_t w = o->len < WINDOW_BYTES ? o->len : WINDOW_BYTES;
			struct inflate_resume at = {
				.in_bit = (uint64_t)br->pos * 8 - br->bit_count,
				.out_offset = o->base + o->len,
				.window = o->data + o->len - w,
				.window_len = w,
			};
			o->sink->block(o->sink->ctx, &at);
		}
		first = false;
		uint32_t type;
		int rc = get_bits(br, 1, &last);
		if (rc == DEFLATE_OK)
			rc = get_bits(br, 2, &type);
		if (rc != DEFLATE_OK)
			return rc;
		if (type == 0) {
			rc = inflate_stored(br, o);
		} else if (type == 1) {
			rc = fixed_tables(&lit, &dist);
			if (rc == DEFLATE_OK)
				rc = inflate_codes(br, o, &lit, &dist);
		} else if (type == 2) {
			rc = dynamic_tables(br, &lit, &dist);
			if (rc == DEFLATE_OK)
				rc = inflate_codes(br, o, &lit, &dist);
		} else {
			rc = DEFLATE_BAD_BLOCK_TYPE;
		}
		if (rc != DEFLATE_OK)
			return rc;
	} while (!last);
	return DEFLATE_OK;
}

int deflate_decompress(const void *in, size_t in_len, void *out, size_t out_cap, size_t *in_used,
		       size_t *out_len)
{
	struct bit_reader br = {.in = in, .len = in_len};
	struct inflate_out o = {.data = out, .cap = out ? out_cap : 0};
	int rc = inflate_blocks(&br, &o);
	if (rc != DEFLATE_OK)
		return rc;
	if (in_used)
		*in_used = br.pos - br.bit_count / 8; /* unused bits of the last byte are padding */
	*out_len = o.len;
	return DEFLATE_OK;
}

int deflate_stream(const void *in, size_t in_len, const struct inflate_resume *from, uint64_t until,
		   uint8_t *work, size_t work_cap, const struct inflate_sink *sink)
{
	if (work_cap < 2 * WINDOW_BYTES || from->window_len > WINDOW_BYTES ||
	    from->in_bit / 8 > in_len)
		return DEFLATE_NO_SPACE;
	struct bit_reader br = {.in = in, .len = in_len, .pos = (size_t)(from->in_bit / 8)};
	struct inflate_out o = {.data = work, .cap = work_cap, .sink = sink};
	if (from->window_len > 0)
		rt_memcpy(work, from->window, from->window_len);
	o.len = o.passed = from->window_len;
	o.base = from->out_offset - from->window_len;
	o.until = until > from->out_offset ? until : 0;
	uint32_t skip;
	int rc = get_bits(&br, (unsigned)(from->in_bit % 8), &skip);
	if (rc == DEFLATE_OK)
		rc = inflate_blocks(&br, &o);
	if (rc == DEFLATE_OK && o.len > o.passed &&
	    !sink->put(sink->ctx, o.base + o.passed, o.data + o.passed, o.len - o.passed))
		rc = DEFLATE_STOPPED;
	return o.stopped ? DEFLATE_STOPPED : rc;
}

const char *deflate_status_text(int status)
{
	switch (status) {
	case DEFLATE_OK: return "no error";
	case DEFLATE_STOPPED: return "stopped by its reader";
	case DEFLATE_TRUNCATED: return "compressed data is truncated";
	case DEFLATE_NO_SPACE: return "decompressed data is larger than its buffer";
	case DEFLATE_BAD_BLOCK_TYPE: return "compressed data has an invalid block type";
	case DEFLATE_BAD_STORED_LENGTH: return "compressed data has a corrupt stored block";
	case DEFLATE_BAD_CODE_COUNTS: return "compressed data has bad code counts";
	case DEFLATE_BAD_CODE_LENGTHS: return "compressed data has invalid code lengths";
	case DEFLATE_NO_END_OF_BLOCK: return "compressed data has no end-of-block code";
	case DEFLATE_OVERSUBSCRIBED: return "compressed data has an over-subscribed Huffman code";
	case DEFLATE_BAD_CODE: return "compressed data has an invalid Huffman code";
	case DEFLATE_BAD_LENGTH_CODE: return "compressed data has an invalid length code";
	case DEFLATE_BAD_DISTANCE_CODE: return "compressed data has an invalid distance code";
	case DEFLATE_BAD_DISTANCE: return "compressed data refers before its start";
	case DEFLATE_BAD_HEADER: return "compressed data has an invalid or unsupported header";
	case DEFLATE_BAD_CHECKSUM: return "compressed data fails its checksum (corrupt data)";
	case DEFLATE_BAD_SIZE: return "gzip length mismatch (corrupt data)";
	default: return "unknown decompression error";
	}
}
