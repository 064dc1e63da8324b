/* DEFLATE decoder (RFC 1951) into a caller-sized output buffer (or,
 * streaming, through a window).  No state outside the call, no allocation:
 * safe in a signal handler.
 *
 * How it is fast: a 64-bit bit buffer refilled with one 8-byte load while
 * at least 8 input bytes remain (a byte at a time after that); decode tables
 * indexed by the next 10 (literal/length) or 8 (distance) input bits whose
 * entries carry everything a symbol needs (a literal byte, or a length or
 * distance base with its extra-bit count), longer codes found through one
 * subtable; a fast loop that runs while 8 input bytes and a whole match of
 * output room remain, so its steps check neither, copying matches 8 bytes
 * at a time; and a careful step, checking everything, for the rest. */

#include "deflate/deflate.h"

#include "rt/rt.h"

#define MAX_BITS 15
#define NUM_LITLEN 288 /* the fixed code's; a dynamic block has at most 286 */
#define NUM_DIST 32    /* the fixed code's; a dynamic block has at most 30 */
#define NUM_LENGTH_CODES 29
#define NUM_DIST_CODES 30
#define NUM_CODE_LENGTH_CODES 19
#define MAX_CODE_LENGTH_BITS 7
#define END_OF_BLOCK 256
#define MAX_MATCH 258
#define MAX_EXTRA_BITS 13 /* of a distance; a length has at most 5 */

/* First-level bits of each decode table, and the most entries a code can
 * need with its subtables (computed by zlib's examples/enough.c: "enough
 * 288 10 15" is 1334, "enough 32 8 15" is 402; the code-length code's
 * codes are at most 7 bits, so it needs no subtable). */
#define LITLEN_BITS 10
#define LITLEN_ENOUGH 1334
#define DIST_BITS 8
#define DIST_ENOUGH 402
#define CODE_LENGTH_ENOUGH (1u << MAX_CODE_LENGTH_BITS)

/* ---- input bits ---- */

/* The low bit_count bits of bit_buf are the next input bits, least
 * significant first; above them bit_buf holds a prefix of the bits of
 * in[pos..] (an 8-byte load brings more than it counts), then zeros. */
struct bit_reader {
	const uint8_t *in;
	size_t len;
	size_t pos;
	uint64_t bit_buf;
	unsigned bit_count; /* 0..63 */
};

/* Brings bit_count to 56..63 with one 8-byte load while 8 input bytes
 * remain, a byte at a time (to fewer at the end of the input) after that.
 * The load counts only whole bytes that fit: (63 - bit_count) / 8 of them. */
static inline void refill(struct bit_reader *br)
{
	if (br->len - br->pos >= sizeof(uint64_t)) {
		br->bit_buf |= rt_load_le64(br->in + br->pos) << br->bit_count;
		br->pos += (63u - br->bit_count) >> 3;
		br->bit_count |= 56u;
		return;
	}
	while (br->bit_count < 56u && br->pos < br->len) {
		br->bit_buf |= (uint64_t)br->in[br->pos++] << br->bit_count;
		br->bit_count += 8;
	}
}

/* Reads `need` bits (0..16), least significant first. */
static int get_bits(struct bit_reader *br, unsigned need, uint32_t *val)
{
	if (br->bit_count < need) {
		refill(br);
		if (br->bit_count < need)
			return DEFLATE_TRUNCATED;
	}
	*val = (uint32_t)(br->bit_buf & ((1ull << need) - 1u));
	br->bit_buf >>= need;
	br->bit_count -= need;
	return DEFLATE_OK;
}

/* ---- decode tables ----
 *
 * A table is indexed by the next `root` input bits; a code longer than
 * that has, at its first `root` bits, a pointer to a subtable indexed by
 * the bits after them.  An entry (uint32_t):
 *   bits 0-4   bits the symbol takes: its code's length (in a subtable: the
 *              length beyond the first level) plus a length's or distance's
 *              extra bits; for a subtable pointer, `root`
 *   bits 8-11  the code's length alone (extra bits follow it); for a
 *              subtable pointer, the subtable's index bits
 *   bit 12     E_END: the end of the block
 *   bit 13     E_SUB: a subtable pointer
 *   bit 14     E_SPECIAL: end of block, subtable pointer or error
 *   bit 15     E_LITERAL
 *   bits 16-31 the literal byte, the length or distance base, the code-length
 *              symbol, the subtable's start, or (E_SPECIAL alone) an error,
 *              the negated deflate_status */
#define E_END 0x1000u
#define E_SUB 0x2000u
#define E_SPECIAL 0x4000u
#define E_LITERAL 0x8000u
#define E_ERROR(status) (E_SPECIAL | (uint32_t)(-(status)) << 16)
#define E_LENGTH(code_len) ((uint32_t)(code_len) << 8 | (uint32_t)(code_len))

static inline unsigned entry_bits(uint32_t e) { return e & 31u; }
static inline unsigned entry_code_len(uint32_t e) { return (e >> 8) & 15u; }
static inline unsigned entry_value(uint32_t e) { return e >> 16; }
static inline int entry_error(uint32_t e) { return -(int)entry_value(e); }

/* The extra bits' value of entry e, from the bits as they were before it was consumed. */
static inline uint32_t entry_extra(uint32_t e, uint64_t before)
{
	return (uint32_t)((before & ((1ull << entry_bits(e)) - 1u)) >> entry_code_len(e));
}

/* Length codes 257..285 and distance codes 0..29 (RFC 1951, 3.2.5). */
static const uint16_t length_base[NUM_LENGTH_CODES] = {
	3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27,
	31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t length_extra[NUM_LENGTH_CODES] = {
	0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[NUM_DIST_CODES] = {
	1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129,
	193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[NUM_DIST_CODES] = {
	0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

enum code_kind { CODE_LITLEN, CODE_DIST, CODE_CODE_LENGTH };

/* An entry for symbol `sym` before its code's length is added. */
static uint32_t symbol_entry(enum code_kind kind, unsigned sym)
{
	if (kind == CODE_CODE_LENGTH)
		return (uint32_t)sym << 16;
	if (kind == CODE_DIST)
		return sym < NUM_DIST_CODES ? (uint32_t)dist_base[sym] << 16 | dist_extra[sym]
					    : E_ERROR(DEFLATE_BAD_DISTANCE_CODE);
	if (sym < END_OF_BLOCK)
		return E_LITERAL | (uint32_t)sym << 16;
	if (sym == END_OF_BLOCK)
		return E_SPECIAL | E_END;
	sym -= END_OF_BLOCK + 1;
	return sym < NUM_LENGTH_CODES ? (uint32_t)length_base[sym] << 16 | length_extra[sym]
				      : E_ERROR(DEFLATE_BAD_LENGTH_CODE);
}

static void fill_entries(uint32_t *t, unsigned from, unsigned end, unsigned stride, uint32_t e)
{
	for (unsigned i = from; i < end; i += stride)
		t[i] = e;
}

/* Builds the decode table of the canonical code with lengths[0..n) (each
 * 0..15) into table[0..cap), first level `root` bits.  Over-subscribed
 * lengths are rejected.  Incomplete ones, as zlib does, only when there is
 * no code at all or (but not for the code-length code) a single code of
 * one bit; the bit patterns no symbol has then decode as errors.  Every
 * entry a lookup can reach is written. */
static int build_table(uint32_t *table, unsigned cap, unsigned root, enum code_kind kind,
		       const uint8_t *lengths, unsigned n)
{
	uint16_t count[MAX_BITS + 1], left_of[MAX_BITS + 1], offsets[MAX_BITS + 1];
	uint16_t sorted[NUM_LITLEN];
	rt_memset(count, 0, sizeof(count));
	for (unsigned i = 0; i < n; i++)
		count[lengths[i] & 15u]++;
	int left = 1;
	unsigned codes = 0;
	for (unsigned len = 1; len <= MAX_BITS; len++) {
		left = 2 * left - count[len];
		if (left < 0)
			return DEFLATE_OVERSUBSCRIBED;
		codes += count[len];
	}
	const unsigned size = 1u << root;
	const uint32_t bad = E_ERROR(DEFLATE_BAD_CODE) | E_LENGTH(1);
	if (left > 0) {
		if (codes == 0) {
			fill_entries(table, 0, size, 1, bad);
			return DEFLATE_OK;
		}
		if (codes != 1 || count[1] != 1 || kind == CODE_CODE_LENGTH)
			return DEFLATE_BAD_CODE_LENGTHS;
		unsigned sym = 0;
		while (sym + 1 < n && lengths[sym] != 1)
			sym++;
		fill_entries(table, 0, size, 2, symbol_entry(kind, sym) + E_LENGTH(1));
		fill_entries(table, 1, size, 2, bad);
		return DEFLATE_OK;
	}
	/* Symbols by code length, then by value: the canonical order. */
	offsets[1] = 0;
	for (unsigned len = 1; len < MAX_BITS; len++)
		offsets[len + 1] = (uint16_t)(offsets[len] + count[len]);
	for (unsigned i = 0; i < n; i++)
		if ((lengths[i] & 15u) != 0)
			sorted[offsets[lengths[i] & 15u]++] = (uint16_t)i;
	rt_memcpy(left_of, count, sizeof(left_of));
	unsigned code = 0; /* the current code, bit-reversed (DEFLATE sends it first bit first) */
	unsigned next_sub = size, sub_prefix = size, sub_start = 0, sub_bits = 0;
	for (unsigned k = 0; k < codes; k++) {
		unsigned sym = sorted[k], len = lengths[sym] & 15u;
		uint32_t e = symbol_entry(kind, sym);
		if (len <= root) {
			fill_entries(table, code, size, 1u << len, e + E_LENGTH(len));
		} else {
			if ((code & (size - 1)) != sub_prefix) {
				/* A subtable as large as the codes sharing these first
				 * bits need: they come next in canonical order. */
				sub_bits = len - root;
				int room = (1 << sub_bits) - left_of[len];
				while (room > 0 && root + sub_bits < MAX_BITS) {
					sub_bits++;
					room = 2 * room - left_of[root + sub_bits];
				}
				if (next_sub + (1u << sub_bits) > cap)
					return DEFLATE_BAD_CODE_LENGTHS; /* cannot happen for a complete code */
				sub_prefix = code & (size - 1);
				sub_start = next_sub;
				next_sub += 1u << sub_bits;
				fill_entries(table, sub_start, next_sub, 1, bad);
				table[sub_prefix] = E_SPECIAL | E_SUB | (uint32_t)sub_start << 16 |
						    sub_bits << 8 | root;
			}
			fill_entries(table + sub_start, code >> root, 1u << sub_bits, 1u << (len - root),
				     e + E_LENGTH(len - root));
		}
		left_of[len]--;
		/* The next code: add one at bit len - 1, carrying downwards. */
		unsigned inc = 1u << (len - 1);
		while (code & inc)
			inc >>= 1;
		code = inc != 0 ? (code & (inc - 1)) + inc : 0;
	}
	return DEFLATE_OK;
}

/* Decodes one symbol of table t, checking the input's end, and consumes
 * its code and extra bits: *entry is its entry, *extra the extra bits'
 * value. */
static int decode_careful(struct bit_reader *br, const uint32_t *t, unsigned root, uint32_t *entry,
			  uint32_t *extra)
{
	if (br->bit_count < MAX_BITS + MAX_EXTRA_BITS)
		refill(br);
	uint32_t e = t[br->bit_buf & ((1u << root) - 1u)];
	unsigned skip = 0;
	if ((e & (E_SPECIAL | E_SUB)) == (E_SPECIAL | E_SUB)) {
		skip = root;
		e = t[entry_value(e) + ((br->bit_buf >> root) & ((1u << entry_code_len(e)) - 1u))];
	}
	if (skip + entry_bits(e) > br->bit_count)
		return DEFLATE_TRUNCATED;
	uint64_t before = br->bit_buf >> skip;
	br->bit_buf >>= skip + entry_bits(e);
	br->bit_count -= skip + entry_bits(e);
	*entry = e;
	*extra = entry_extra(e, before);
	return DEFLATE_OK;
}

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


/* ---- Huffman blocks ---- */

#define BLOCK_DONE 2 /* internal: the end-of-block code was read */

/* Output room the fast loop keeps: a step writes at most a literal and a
 * match, and a match copy may write 13 bytes past its end (16 for the
 * shortest). */
#define FAST_OUT_ROOM (1 + MAX_MATCH + 2 * sizeof(uint64_t))

static inline void copy_word(uint8_t *d, const uint8_t *s)
{
	uint64_t w;
	__builtin_memcpy(&w, s, sizeof(w));
	__builtin_memcpy(d, &w, sizeof(w));
}

/* Copies a match of `length` bytes from `distance` back, in 8-byte words
 * when it does not overlap the word it reads, two at once first (most
 * matches are short): writes up to 13 bytes past the end, which the
 * caller has room for. */
static inline void copy_match(uint8_t *d, size_t distance, size_t length)
{
	const uint8_t *s = d - distance;
	uint8_t *end = d + length;
	if (distance >= sizeof(uint64_t)) {
		copy_word(d, s);
		copy_word(d + 8, s + 8);
		for (d += 16, s += 16; d < end; d += 8, s += 8)
			copy_word(d, s);
	} else if (distance == 1) {
		uint64_t w = *s * 0x0101010101010101ull;
		do {
			__builtin_memcpy(d, &w, sizeof(w));
			d += sizeof(w);
		} while (d < end);
	} else {
		do /* byte by byte: each byte may be one this copy wrote */
			*d++ = *s++;
		while (d < end);
	}
}

/* Decodes while 8 input bytes (one load) and FAST_OUT_ROOM bytes of
 * output room remain, so a step checks neither.  A step starts with a
 * refill (56 bits or more), enough for the longest symbol pair: a literal
 * of at most LITLEN_BITS bits then a length of at most 15 and a distance
 * of at most 28 (or a length from a subtable, 20 bits, then a distance).
 * DEFLATE_OK when it stopped for want of input or room (the careful step
 * goes on), BLOCK_DONE or an error. */
static int fast_loop(struct bit_reader *br, struct inflate_out *o, const uint32_t *lit,
		     const uint32_t *dist)
{
	size_t limit = out_limit(o);
	if (limit - o->len < FAST_OUT_ROOM || br->len - br->pos < sizeof(uint64_t))
		return DEFLATE_OK;
	uint8_t *const start = o->data, *out = o->data + o->len;
	uint8_t *const out_last = o->data + limit - FAST_OUT_ROOM;
	const uint8_t *in = br->in + br->pos;
	const uint8_t *const in_last = br->in + br->len - sizeof(uint64_t);
	uint64_t bits = br->bit_buf;
	unsigned count = br->bit_count;
	const uint64_t lit_mask = (1u << LITLEN_BITS) - 1u, dist_mask = (1u << DIST_BITS) - 1u;
	int rc = DEFLATE_OK;
	do {
		bits |= rt_load_le64(in) << count;
		in += (63u - count) >> 3;
		count |= 56u;
		uint32_t e = lit[bits & lit_mask];
		if (e & E_LITERAL) {
			bits >>= entry_bits(e);
			count -= entry_bits(e);
			*out++ = (uint8_t)entry_value(e);
			e = lit[bits & lit_mask];
			if (e & E_LITERAL) {
				bits >>= entry_bits(e);
				count -= entry_bits(e);
				*out++ = (uint8_t)entry_value(e);
				continue;
			}
			if (e & E_SUB)
				continue; /* up to 20 more bits: refill first */
		}
		if (e & E_SPECIAL) {
			if (e & E_SUB) {
				bits >>= LITLEN_BITS;
				count -= LITLEN_BITS;
				e = lit[entry_value(e) + (bits & ((1u << entry_code_len(e)) - 1u))];
				if (e & E_LITERAL) {
					bits >>= entry_bits(e);
					count -= entry_bits(e);
					*out++ = (uint8_t)entry_value(e);
					continue;
				}
			}
			if (e & E_SPECIAL) {
				if (e & E_END) {
					bits >>= entry_bits(e);
					count -= entry_bits(e);
					rc = BLOCK_DONE;
				} else {
					rc = entry_error(e);
				}
				break;
			}
		}
		uint64_t before = bits;
		bits >>= entry_bits(e);
		count -= entry_bits(e);
		size_t length = entry_value(e) + entry_extra(e, before);
		e = dist[bits & dist_mask];
		if (e & E_SUB) {
			bits >>= DIST_BITS;
			count -= DIST_BITS;
			e = dist[entry_value(e) + (bits & ((1u << entry_code_len(e)) - 1u))];
		}
		if (e & E_SPECIAL) {
			rc = entry_error(e);
			break;
		}
		before = bits;
		bits >>= entry_bits(e);
		count -= entry_bits(e);
		size_t distance = entry_value(e) + entry_extra(e, before);
		if (distance > (size_t)(out - start)) {
			rc = DEFLATE_BAD_DISTANCE;
			break;
		}
		copy_match(out, distance, length);
		out += length;
	} while (out <= out_last && in <= in_last);
	br->pos = (size_t)(in - br->in);
	br->bit_buf = bits;
	br->bit_count = count;
	o->len = (size_t)(out - start);
	return rc;
}

/* Decodes one literal, match or end of block, checking everything: the
 * input's end, the output's room (making room when streaming). */
static int careful_step(struct bit_reader *br, struct inflate_out *o, const uint32_t *lit,
			const uint32_t *dist)
{
	uint32_t e, extra;
	int rc = decode_careful(br, lit, LITLEN_BITS, &e, &extra);
	if (rc != DEFLATE_OK)
		return rc;
	if (e & E_LITERAL) {
		if (o->len == out_limit(o) && (rc = make_room(o, 1)) != DEFLATE_OK)
			return rc;
		o->data[o->len++] = (uint8_t)entry_value(e);
		return DEFLATE_OK;
	}
	if (e & E_SPECIAL)
		return (e & E_END) ? BLOCK_DONE : entry_error(e);
	size_t length = entry_value(e) + extra;
	rc = decode_careful(br, dist, DIST_BITS, &e, &extra);
	if (rc != DEFLATE_OK)
		return rc;
	if (e & E_SPECIAL)
		return entry_error(e);
	size_t distance = entry_value(e) + extra;
	if (distance > o->len)
		return DEFLATE_BAD_DISTANCE;
	if (out_limit(o) - o->len < length && (rc = make_room(o, length)) != DEFLATE_OK)
		return rc;
	uint8_t *d = o->data + o->len;
	const uint8_t *from = d - distance;
	for (size_t i = 0; i < length; i++) /* byte by byte: copies may overlap */
		d[i] = from[i];
	o->len += length;
	return DEFLATE_OK;
}

/* Each pass of the loop consumes input or fails: bounded by the input. */
static int inflate_codes(struct bit_reader *br, struct inflate_out *o, const uint32_t *lit,
			 const uint32_t *dist)
{
	for (;;) {
		int rc = fast_loop(br, o, lit, dist);
		if (rc == DEFLATE_OK)
			rc = careful_step(br, o, lit, dist);
		if (rc == BLOCK_DONE)
			return DEFLATE_OK;
		if (rc != DEFLATE_OK)
			return rc;
	}
}

/* The decode tables of one block. */
struct block_tables {
	uint32_t lit[LITLEN_ENOUGH];
	uint32_t dist[DIST_ENOUGH];
};

static int fixed_tables(struct block_tables *t)
{
	uint8_t lengths[NUM_LITLEN];
	unsigned i = 0;
	for (; i < 144; i++)
		lengths[i] = 8;
	for (; i < 256; i++)
		lengths[i] = 9;
	for (; i < 280; i++)
		lengths[i] = 7;
	for (; i < NUM_LITLEN; i++)
		lengths[i] = 8;
	int rc = build_table(t->lit, LITLEN_ENOUGH, LITLEN_BITS, CODE_LITLEN, lengths, NUM_LITLEN);
	if (rc != DEFLATE_OK)
		return rc;
	for (i = 0; i < NUM_DIST; i++)
		lengths[i] = 5;
	return build_table(t->dist, DIST_ENOUGH, DIST_BITS, CODE_DIST, lengths, NUM_DIST);
}

static int dynamic_tables(struct bit_reader *br, struct block_tables *t)
{
	static const uint8_t order[NUM_CODE_LENGTH_CODES] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
							    11, 4,  12, 3, 13, 2, 14, 1, 15};
	uint8_t lengths[NUM_LITLEN + NUM_DIST];
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
	if (hlit > 286 || hdist > NUM_DIST_CODES)
		return DEFLATE_BAD_CODE_COUNTS;
	rt_memset(lengths, 0, sizeof(lengths));
	for (unsigned i = 0; i < hclen; i++) {
		uint32_t v;
		rc = get_bits(br, 3, &v);
		if (rc != DEFLATE_OK)
			return rc;
		lengths[order[i]] = (uint8_t)v;
	}
	/* The code-length code's table borrows the literal/length table's
	 * room, which is built last. */
	uint32_t *code_lengths = t->lit;
	rc = build_table(code_lengths, CODE_LENGTH_ENOUGH, MAX_CODE_LENGTH_BITS, CODE_CODE_LENGTH,
			 lengths, NUM_CODE_LENGTH_CODES);
	if (rc != DEFLATE_OK)
		return rc;
	unsigned total = hlit + hdist, n = 0;
	while (n < total) {
		uint32_t e, unused;
		rc = decode_careful(br, code_lengths, MAX_CODE_LENGTH_BITS, &e, &unused);
		if (rc != DEFLATE_OK)
			return rc;
		if (e & E_SPECIAL)
			return entry_error(e);
		unsigned sym = entry_value(e);
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
	rc = build_table(t->dist, DIST_ENOUGH, DIST_BITS, CODE_DIST, lengths + hlit, hdist);
	if (rc != DEFLATE_OK)
		return rc;
	return build_table(t->lit, LITLEN_ENOUGH, LITLEN_BITS, CODE_LITLEN, lengths, hlit);
}

/* Decodes blocks until the last one.  Streaming, the sink hears where each
 * block after the first starts. */
static int inflate_blocks(struct bit_reader *br, struct inflate_out *o)
{
	struct block_tables tables;
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
			rc = fixed_tables(&tables);
			if (rc == DEFLATE_OK)
				rc = inflate_codes(br, o, tables.lit, tables.dist);
		} else if (type == 2) {
			rc = dynamic_tables(br, &tables);
			if (rc == DEFLATE_OK)
				rc = inflate_codes(br, o, tables.lit, tables.dist);
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
