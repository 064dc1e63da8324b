/* DEFLATE (RFC 1951) compressor.  See deflate.h for the contract and
 * deflate_compress.h for the state; gzip_compress.c wraps it.
 *
 * Layout of the work:
 *  - Input is copied into a 64 KiB buffer; the last 32 KiB before the current
 *    position are the match window.  When the buffer is full it slides down by
 *    32 KiB and the hash positions are rebased.
 *  - Matches are found with hash chains keyed on 4 bytes (head[] and prev[]
 *    hold buffer positions, 0 meaning "none"), at most max_chain candidates.
 *  - Literals and (length, distance) pairs go to a symbol buffer; when it is
 *    full (or at the end) the block is written in the cheapest of the three
 *    block types, computed exactly in bits.
 */
#include "deflate/deflate_compress.h"

#include <linux/errno.h>

#include "rt/rt.h"

/* Tuned on pprof bodies (tests/bench/bench_gzip.sh): level 6 matches `gzip -6`
 * in size at well over twice its speed; longer chains gain little there.
 * Level 1 hashes the inside of matches only up to 4 bytes: on clang's pprof
 * bodies that is ~1% larger than 8 and a few percent faster. */
static const struct level_config level_configs[10] = {
	[1] = {4, 0, 32, 0, 4},
	[2] = {8, 0, 32, 0, 16},
	[3] = {6, 4, 24, 6, 0},
	[4] = {8, 4, 32, 8, 0},
	[5] = {12, 8, 48, 8, 0},
	[6] = {16, 8, 64, 8, 0},
	[7] = {48, 16, 128, 32, 0},
	[8] = {256, 32, 258, 258, 0},
	[9] = {2048, 32, 258, 258, 0},
};

/* ---- small helpers ---- */

static inline uint32_t hash4(const uint8_t *p, uint32_t bits)
{
	return (rt_load_le32(p) * 2654435761u) >> (32 - bits);
}

static inline uint32_t dist_code_of(const struct deflate_compressor *s, uint32_t dist_minus1)
{
	return dist_minus1 < 256 ? s->dist_code[dist_minus1] : s->dist_code[256 + (dist_minus1 >> 7)];
}

static uint16_t reverse_bits(uint32_t code, uint32_t len)
{
	uint32_t r = 0;
	for (uint32_t i = 0; i < len; i++) {
		r = (r << 1) | (code & 1);
		code >>= 1;
	}
	return (uint16_t)r;
}

/* ---- static tables ---- */

static void assign_canonical_codes(const uint8_t *lens, uint32_t n, uint16_t *codes)
{
	uint32_t count[MAX_CODE_BITS + 1] = {0};
	uint32_t next[MAX_CODE_BITS + 1] = {0};
	for (uint32_t i = 0; i < n; i++)
		count[lens[i]]++;
	count[0] = 0;
	uint32_t code = 0;
	for (uint32_t len = 1; len <= MAX_CODE_BITS; len++) {
		code = (code + count[len - 1]) << 1;
		next[len] = code;
	}
	for (uint32_t i = 0; i < n; i++) {
		codes[i] = 0;
		if (lens[i])
			codes[i] = reverse_bits(next[lens[i]]++, lens[i]);
	}
}

static void init_tables(struct deflate_compressor *s)
{
	uint32_t base = 0;
	for (uint32_t c = 0; c < NUM_LEN_CODES - 1; c++) {
		s->len_extra[c] = (uint8_t)(c < 8 ? 0 : (c - 4) / 4);
		s->len_base[c] = (uint16_t)base;
		for (uint32_t k = 0; k < (1u << s->len_extra[c]); k++)
			s->len_code[base + k] = (uint8_t)c;
		base += 1u << s->len_extra[c];
	}
	/* Length 258 has its own code (285) with no extra bits. */
	s->len_extra[NUM_LEN_CODES - 1] = 0;
	s->len_base[NUM_LEN_CODES - 1] = MAX_MATCH - 3;
	s->len_code[MAX_MATCH - 3] = NUM_LEN_CODES - 1;

	base = 0;
	for (uint32_t c = 0; c < NUM_DIST; c++) {
		s->dist_extra[c] = (uint8_t)(c < 2 ? 0 : (c - 2) / 2);
		s->dist_base[c] = (uint16_t)base;
		/* Codes from 16 on start at multiples of 128 and span >= 128. */
		for (uint32_t k = 0; k < (1u << s->dist_extra[c]);) {
			uint32_t d = base + k; /* distance - 1 */
			if (d < 256) {
				s->dist_code[d] = (uint8_t)c;
				k++;
			} else {
				s->dist_code[256 + (d >> 7)] = (uint8_t)c;
				k += 128;
			}
		}
		base += 1u << s->dist_extra[c];
	}

	for (uint32_t i = 0; i < NUM_FIXED_LITLEN; i++)
		s->fixed.lit_len[i] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
	assign_canonical_codes(s->fixed.lit_len, NUM_FIXED_LITLEN, s->fixed.lit_code);
	for (uint32_t i = 0; i < NUM_DIST; i++)
		s->fixed.dist_len[i] = 5;
	assign_canonical_codes(s->fixed.dist_len, NUM_DIST, s->fixed.dist_code);
}

/* ---- Huffman code construction ---- */

/* Takes the lighter of the next leaf and the next internal node (leaves win
 * ties, which keeps the tree shallow). */
static uint32_t take_lightest(const struct huff_work *w, uint32_t *next_leaf, uint32_t nleaves,
			      uint32_t *next_node, uint32_t created)
{
	if (*next_leaf < nleaves && (*next_node >= created || w->weight[*next_leaf] <= w->weight[*next_node]))
		return (*next_leaf)++;
	return (*next_node)++;
}

/* Optimal code lengths for freq[0..n), limited to `limit` bits, always a
 * complete code with at least two symbols (zlib's inflate rejects anything
 * else).  Unused symbols get length 0. */
static void build_lengths(struct huff_work *w, const uint32_t *freq, uint32_t n, uint32_t limit,
			  uint8_t *lens)
{
	uint32_t used = 0;
	for (uint32_t i = 0; i < n; i++) {
		lens[i] = 0;
		if (freq[i])
			w->keys[used++] = ((uint64_t)freq[i] << 16) | i;
	}
	if (used < 2) {
		uint32_t sym = used ? (uint32_t)(w->keys[0] & 0xffff) : 0;
		lens[sym] = 1;
		lens[sym == 0 ? 1 : 0] = 1;
		return;
	}
	rt_sort_u64(w->keys, used, w->scratch);

	/* Two-queue Huffman: leaves 0..used-1 ascending, internal nodes after. */
	for (uint32_t i = 0; i < used; i++)
		w->weight[i] = (uint32_t)(w->keys[i] >> 16);
	uint32_t next_leaf = 0, next_node = used, created = used;
	for (uint32_t k = 0; k + 1 < used; k++) {
		uint32_t a = take_lightest(w, &next_leaf, used, &next_node, created);
		uint32_t b = take_lightest(w, &next_leaf, used, &next_node, created);
		w->weight[created] = w->weight[a] + w->weight[b];
		w->parent[a] = (uint16_t)created;
		w->parent[b] = (uint16_t)created;
		created++;
	}
	uint32_t root = created - 1;
	w->depth[root] = 0;
	for (uint32_t i = root; i-- > 0;)
		w->depth[i] = (uint16_t)(w->depth[w->parent[i]] + 1);

	/* Clamp to the limit, then restore Kraft equality: each step moves the
	 * deepest leaf above the limit down one level and pairs it with a leaf
	 * taken from the limit level, lowering the Kraft sum by one unit. */
	uint32_t count[MAX_CODE_BITS + 1] = {0};
	for (uint32_t i = 0; i < used; i++)
		count[w->depth[i] > limit ? limit : w->depth[i]]++;
	uint64_t kraft = 0;
	for (uint32_t len = 1; len <= limit; len++)
		kraft += (uint64_t)count[len] << (limit - len);
	const uint64_t full = (uint64_t)1 << limit;
	while (kraft > full) {
		uint32_t len = limit - 1;
		while (len > 1 && count[len] == 0)
			len--;
		if (count[len] == 0 || count[limit] == 0)
			break; /* impossible for n <= 2^limit; keeps the loop bounded */
		count[len]--;
		count[len + 1] += 2;
		count[limit]--;
		kraft--;
	}
	/* Least frequent symbols get the longest codes. */
	uint32_t idx = 0;
	for (uint32_t len = limit; len >= 1; len--)
		for (uint32_t c = 0; c < count[len]; c++)
			lens[w->keys[idx++] & 0xffff] = (uint8_t)len;
}

static const uint8_t cl_order[NUM_CL] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

static void plan_token(struct header_plan *h, uint32_t sym, uint32_t extra)
{
	h->tok_sym[h->ntok] = (uint8_t)sym;
	h->tok_extra[h->ntok] = (uint8_t)extra;
	h->ntok++;
	h->cl_freq[sym]++;
}

/* Run-length codes the literal/length and distance code lengths (one
 * sequence, runs may cross the boundary) and builds the code-length code. */
static void plan_header(struct deflate_compressor *s)
{
	struct header_plan *h = &s->plan;
	const struct huff_code *c = &s->dyn;
	uint8_t seq[NUM_LITLEN + NUM_DIST];
	h->hlit = NUM_LITLEN;
	while (h->hlit > 257 && c->lit_len[h->hlit - 1] == 0)
		h->hlit--;
	h->hdist = NUM_DIST;
	while (h->hdist > 1 && c->dist_len[h->hdist - 1] == 0)
		h->hdist--;
	for (uint32_t i = 0; i < h->hlit; i++)
		seq[i] = c->lit_len[i];
	for (uint32_t i = 0; i < h->hdist; i++)
		seq[h->hlit + i] = c->dist_len[i];
	uint32_t total = h->hlit + h->hdist;

	h->ntok = 0;
	rt_memset(h->cl_freq, 0, sizeof(h->cl_freq));
	uint32_t i = 0;
	while (i < total) {
		uint32_t v = seq[i];
		uint32_t run = 1;
		while (i + run < total && seq[i + run] == v)
			run++;
		i += run;
		if (v == 0) {
			while (run >= 11) {
				uint32_t r = RT_MIN(run, 138u);
				plan_token(h, 18, r - 11);
				run -= r;
			}
			if (run >= 3) {
				plan_token(h, 17, run - 3);
				run = 0;
			}
		} else {
			plan_token(h, v, 0);
			run--;
			while (run >= 3) {
				uint32_t r = RT_MIN(run, 6u);
				plan_token(h, 16, r - 3);
				run -= r;
			}
		}
		for (; run > 0; run--)
			plan_token(h, v, 0);
	}

	build_lengths(&s->work, h->cl_freq, NUM_CL, MAX_CL_BITS, h->cl_len);
	assign_canonical_codes(h->cl_len, NUM_CL, h->cl_code);
	h->hclen = NUM_CL;
	while (h->hclen > 4 && h->cl_len[cl_order[h->hclen - 1]] == 0)
		h->hclen--;
	uint64_t bits = 5 + 5 + 4 + 3 * (uint64_t)h->hclen;
	for (uint32_t sym = 0; sym < NUM_CL; sym++) {
		uint32_t extra = sym == 16 ? 2 : sym == 17 ? 3 : sym == 18 ? 7 : 0;
		bits += (uint64_t)h->cl_freq[sym] * (h->cl_len[sym] + extra);
	}
	h->bits = bits;
}

/* Bits of the block's symbols (with end of block) under a code. */
static uint64_t symbol_bits(const struct deflate_compressor *s, const struct huff_code *c)
{
	uint64_t bits = 0;
	for (uint32_t i = 0; i < NUM_LITLEN; i++)
		bits += (uint64_t)s->lit_freq[i] * c->lit_len[i];
	for (uint32_t i = 0; i < NUM_LEN_CODES; i++)
		bits += (uint64_t)s->lit_freq[257 + i] * s->len_extra[i];
	for (uint32_t i = 0; i < NUM_DIST; i++)
		bits += (uint64_t)s->dist_freq[i] * (c->dist_len[i] + s->dist_extra[i]);
	return bits;
}

/* ---- bit output ---- */

/* The accumulator holds < 8 bits between calls: each call adds at most 56
 * and stores the whole word, advancing by the complete bytes (the out
 * buffer has 8 bytes of slack past the block's size). */
static inline void flush_bits(struct bit_writer *bw)
{
	uint64_t v = bw->acc;
	__builtin_memcpy(bw->p, &v, sizeof(v));
	bw->p += bw->nbits >> 3;
	bw->acc >>= bw->nbits & ~7u;
	bw->nbits &= 7;
}

static inline void put_bits(struct bit_writer *bw, uint64_t bits, uint32_t n)
{
	bw->acc |= bits << bw->nbits;
	bw->nbits += n;
	flush_bits(bw);
}

/* Pads to a byte boundary and writes out every pending byte. */
static void align_bytes(struct bit_writer *bw)
{
	while (bw->nbits > 0) {
		*bw->p++ = (uint8_t)bw->acc;
		bw->acc >>= 8;
		bw->nbits = bw->nbits > 8 ? bw->nbits - 8 : 0;
	}
	bw->acc = 0;
}

/* Writes the block's symbols: a literal or a whole match (at most 20 + 28
 * bits) goes into the accumulator before one store. */
static void put_symbols(struct deflate_compressor *s, struct bit_writer *bw, const struct huff_code *c)
{
	/* Length code and extra bits of every match length, for this code. */
	for (uint32_t lc = 0; lc < 256; lc++) {
		uint32_t lcode = s->len_code[lc];
		uint32_t sym = 257 + lcode;
		s->len_bits[lc] = c->lit_code[sym] | (uint32_t)(lc - s->len_base[lcode]) << c->lit_len[sym];
		s->len_nbits[lc] = (uint8_t)(c->lit_len[sym] + s->len_extra[lcode]);
	}
	/* A local copy: its fields stay in registers through the stores. */
	struct bit_writer out = *bw;
	for (uint32_t i = 0; i < s->sym_count; i++) {
		uint32_t dist = s->sym_dist[i];
		uint32_t lc = s->sym_lc[i];
		if (dist == 0) {
			out.acc |= (uint64_t)c->lit_code[lc] << out.nbits;
			out.nbits += c->lit_len[lc];
		} else {
			out.acc |= (uint64_t)s->len_bits[lc] << out.nbits;
			out.nbits += s->len_nbits[lc];
			uint32_t d = dist - 1;
			uint32_t dcode = dist_code_of(s, d);
			out.acc |= ((uint64_t)c->dist_code[dcode] | (uint64_t)(d - s->dist_base[dcode]) << c->dist_len[dcode])
				   << out.nbits;
			out.nbits += c->dist_len[dcode] + s->dist_extra[dcode];
		}
		flush_bits(&out);
	}
	put_bits(&out, c->lit_code[END_OF_BLOCK], c->lit_len[END_OF_BLOCK]);
	*bw = out;
}

static void put_dynamic_header(const struct header_plan *h, struct bit_writer *bw)
{
	put_bits(bw, h->hlit - 257, 5);
	put_bits(bw, h->hdist - 1, 5);
	put_bits(bw, h->hclen - 4, 4);
	for (uint32_t i = 0; i < h->hclen; i++)
		put_bits(bw, h->cl_len[cl_order[i]], 3);
	for (uint32_t i = 0; i < h->ntok; i++) {
		uint32_t sym = h->tok_sym[i];
		put_bits(bw, h->cl_code[sym], h->cl_len[sym]);
		if (sym == 16)
			put_bits(bw, h->tok_extra[i], 2);
		else if (sym == 17)
			put_bits(bw, h->tok_extra[i], 3);
		else if (sym == 18)
			put_bits(bw, h->tok_extra[i], 7);
	}
}

static void put_stored(struct bit_writer *bw, const uint8_t *p, uint32_t len, bool last)
{
	do {
		uint32_t chunk = RT_MIN(len, STORED_MAX);
		bool final_chunk = chunk == len;
		put_bits(bw, (last && final_chunk) ? 1 : 0, 3);
		align_bytes(bw);
		bw->p[0] = (uint8_t)chunk;
		bw->p[1] = (uint8_t)(chunk >> 8);
		bw->p[2] = (uint8_t)~chunk;
		bw->p[3] = (uint8_t)(~chunk >> 8);
		rt_memcpy(bw->p + 4, p, chunk);
		bw->p += 4 + chunk;
		p += chunk;
		len -= chunk;
	} while (len > 0);
}

static uint64_t stored_bits(uint32_t nbits_pending, uint32_t len)
{
	uint32_t chunks = len == 0 ? 1 : (len + STORED_MAX - 1) / STORED_MAX;
	uint32_t pad = (8 - (nbits_pending + 3) % 8) % 8;
	return 3 + pad + 32 + 8 * (uint64_t)len + (uint64_t)(chunks - 1) * (8 + 32);
}

/* ---- blocks ---- */

static void fail(struct deflate_compressor *s, int err)
{
	if (!s->error)
		s->error = err;
}

/* Makes room for `bytes` more output and points the writer at the end. */
static bool out_reserve(struct deflate_compressor *s, uint64_t bytes)
{
	if (bytes > SIZE_MAX / 2 || !rt_buf_reserve(s->out, (size_t)bytes)) {
		fail(s, -ENOMEM);
		return false;
	}
	s->bw.p = s->out->data + s->out->len;
	return true;
}

static void out_commit(struct deflate_compressor *s) { s->out->len = (size_t)(s->bw.p - s->out->data); }

static void flush_block(struct deflate_compressor *s, bool last)
{
	s->lit_freq[END_OF_BLOCK] = 1;
	build_lengths(&s->work, s->lit_freq, NUM_LITLEN, MAX_CODE_BITS, s->dyn.lit_len);
	s->dyn.lit_len[286] = 0;
	s->dyn.lit_len[287] = 0;
	assign_canonical_codes(s->dyn.lit_len, NUM_FIXED_LITLEN, s->dyn.lit_code);
	build_lengths(&s->work, s->dist_freq, NUM_DIST, MAX_CODE_BITS, s->dyn.dist_len);
	assign_canonical_codes(s->dyn.dist_len, NUM_DIST, s->dyn.dist_code);
	plan_header(s);

	uint64_t dyn_bits = 3 + s->plan.bits + symbol_bits(s, &s->dyn);
	uint64_t fixed_bits = 3 + symbol_bits(s, &s->fixed);
	uint64_t best = RT_MIN(dyn_bits, fixed_bits);
	bool can_store = s->block_start >= 0;
	uint64_t store_bits = can_store ? stored_bits(s->bw.nbits, s->block_len) : UINT64_MAX;
	best = RT_MIN(best, store_bits);

	/* Pending bits, the block, and slack for the last partial word. */
	if (out_reserve(s, best / 8 + 16)) {
		if (best == store_bits) {
			put_stored(&s->bw, s->window + s->block_start, s->block_len, last);
		} else if (best == fixed_bits) {
			put_bits(&s->bw, (last ? 1 : 0) | (1u << 1), 3);
			put_symbols(s, &s->bw, &s->fixed);
		} else {
			put_bits(&s->bw, (last ? 1 : 0) | (2u << 1), 3);
			put_dynamic_header(&s->plan, &s->bw);
			put_symbols(s, &s->bw, &s->dyn);
		}
		out_commit(s);
	}

	s->block_start += (int32_t)s->block_len;
	s->block_len = 0;
	s->sym_count = 0;
	rt_memset(s->lit_freq, 0, sizeof(s->lit_freq));
	rt_memset(s->dist_freq, 0, sizeof(s->dist_freq));
}

static inline void emit_literal(struct deflate_compressor *s, uint32_t c)
{
	s->sym_dist[s->sym_count] = 0;
	s->sym_lc[s->sym_count] = (uint8_t)c;
	s->sym_count++;
	s->lit_freq[c]++;
	s->block_len++;
	if (s->sym_count == SYM_MAX)
		flush_block(s, false);
}

static inline void emit_match(struct deflate_compressor *s, uint32_t len, uint32_t dist)
{
	uint32_t lc = len - 3;
	s->sym_dist[s->sym_count] = (uint16_t)dist;
	s->sym_lc[s->sym_count] = (uint8_t)lc;
	s->sym_count++;
	s->lit_freq[257 + s->len_code[lc]]++;
	s->dist_freq[dist_code_of(s, dist - 1)]++;
	s->block_len += len;
	if (s->sym_count == SYM_MAX)
		flush_block(s, false);
}

/* ---- match finding ---- */

/* Inserts `pos` into its hash chain; returns the previous head (0: none). */
static inline uint32_t insert_pos(struct deflate_compressor *s, uint32_t pos)
{
	uint32_t h = hash4(s->window + pos, s->hash_bits);
	uint32_t cand = s->head[h];
	s->prev[pos & WIN_MASK] = (uint16_t)cand;
	s->head[h] = (uint16_t)pos;
	return cand;
}

/* Length of the match between m and cur (their first 4 bytes are known to
 * agree), at most max_len; reads up to 8 bytes past cur + max_len. */
static inline uint32_t match_len(const uint8_t *m, const uint8_t *cur, uint32_t max_len)
{
	uint32_t len = HASH_BYTES;
	while (len < max_len) {
		uint64_t x = rt_load_le64(m + len) ^ rt_load_le64(cur + len);
		if (x) {
			len += (uint32_t)__builtin_ctzll(x) >> 3;
			break;
		}
		len += 8;
	}
	return len > max_len ? max_len : len;
}

/* Longest match at `pos` longer than best_len (>= 3), among candidates on
 * the chain starting at `cand`.  Returns its length (or best_len if none is
 * longer) and sets *dist_out when it finds one. */
static uint32_t find_match(const struct deflate_compressor *s, uint32_t pos, uint32_t cand, uint32_t best_len,
			   uint32_t max_len, uint32_t *dist_out)
{
	const uint8_t *w = s->window;
	const uint8_t *cur = w + pos;
	uint32_t limit = pos > WIN_SIZE ? pos - WIN_SIZE : 1;
	uint32_t chain = s->cfg.max_chain;
	if (best_len >= s->cfg.good_len && s->cfg.good_len)
		chain >>= 2;
	uint32_t nice = RT_MIN((uint32_t)s->cfg.nice_len, max_len);
	if (best_len >= max_len)
		return best_len;
	while (cand >= limit && chain-- > 0) {
		const uint8_t *m = w + cand;
		if (rt_load_le32(m + best_len - 3) == rt_load_le32(cur + best_len - 3) &&
		    rt_load_le32(m) == rt_load_le32(cur)) {
			uint32_t len = match_len(m, cur, max_len);
			if (len > best_len) {
				best_len = len;
				*dist_out = pos - cand;
				if (len >= nice)
					break;
			}
		}
		uint32_t next = s->prev[cand & WIN_MASK];
		if (next >= cand)
			break; /* slot reused by a newer position: chain ends */
		cand = next;
	}
	return best_len;
}

/* Greedy parsing (levels 1-2): find_match and insert_pos written out with
 * the state's fields in locals (under -fno-strict-aliasing each store to
 * the tables would reload them).  Stops with MIN_LOOKAHEAD bytes left
 * unless finishing. */
static void compress_greedy(struct deflate_compressor *s, bool finishing)
{
	const uint8_t *w = s->window;
	uint16_t *head = s->head;
	uint16_t *prev = s->prev;
	const uint32_t bits = s->hash_bits;
	const uint32_t max_chain = s->cfg.max_chain;
	const uint32_t nice_len = s->cfg.nice_len;
	const uint32_t insert_limit = s->cfg.insert_limit;
	const uint32_t end = s->win_end;
	/* Below full_end a whole MAX_MATCH (and the compare's overread) fits. */
	const uint32_t full_end = end >= MIN_LOOKAHEAD ? end - MIN_LOOKAHEAD + 1 : 0;
	const uint32_t hash_end = end >= HASH_BYTES ? end - HASH_BYTES + 1 : 0;
	/* Finishing, the last HASH_BYTES - 1 bytes go out as literals. */
	const uint32_t stop = finishing ? end : full_end;
	uint16_t *sym_dist = s->sym_dist;
	uint8_t *sym_lc = s->sym_lc;
	uint32_t *lit_freq = s->lit_freq;
	uint32_t *dist_freq = s->dist_freq;
	uint32_t pos = s->pos;
	uint32_t sym = s->sym_count;
	uint32_t block_len = s->block_len;
	while (pos < stop) {
		/* best_len 3: none yet; a candidate must agree at the 4 bytes
		 * ending one past best_len before it is measured. */
		uint32_t best_len = HASH_BYTES - 1, best_dist = 0;
		uint32_t max_len = pos < full_end ? MAX_MATCH : RT_MIN(end - pos, (uint32_t)MAX_MATCH);
		uint32_t limit = pos > WIN_SIZE ? pos - WIN_SIZE : 1;
		uint32_t cur4 = 0, cand = 0; /* none within the last HASH_BYTES - 1 bytes */
		if (pos < hash_end) {
			uint32_t h = hash4(w + pos, bits);
			cur4 = rt_load_le32(w + pos);
			cand = head[h];
			head[h] = (uint16_t)pos;
			prev[pos & WIN_MASK] = (uint16_t)cand;
		}
		for (uint32_t k = 0; k < max_chain && cand >= limit; k++) {
			const uint8_t *m = w + cand;
			if (rt_load_le32(m + best_len - 3) == rt_load_le32(w + pos + best_len - 3) &&
			    rt_load_le32(m) == cur4) {
				uint32_t len = match_len(m, w + pos, max_len);
				if (len > best_len) {
					best_len = len;
					best_dist = pos - cand;
					if (len >= nice_len || len >= max_len)
						break;
				}
			}
			uint32_t next = prev[cand & WIN_MASK];
			if (next >= cand)
				break; /* slot reused by a newer position: chain ends */
			cand = next;
		}
		if (best_len >= HASH_BYTES) {
			uint32_t lc = best_len - 3;
			sym_dist[sym] = (uint16_t)best_dist;
			sym_lc[sym] = (uint8_t)lc;
			lit_freq[257 + s->len_code[lc]]++;
			dist_freq[dist_code_of(s, best_dist - 1)]++;
			if (best_len <= insert_limit) {
				uint32_t in_end = RT_MIN(pos + best_len, hash_end);
				for (uint32_t p = pos + 1; p < in_end; p++) {
					uint32_t hp = hash4(w + p, bits);
					prev[p & WIN_MASK] = head[hp];
					head[hp] = (uint16_t)p;
				}
			}
			pos += best_len;
			block_len += best_len;
		} else {
			sym_dist[sym] = 0;
			sym_lc[sym] = w[pos];
			lit_freq[w[pos]]++;
			pos++;
			block_len++;
		}
		if (++sym == SYM_MAX) {
			s->sym_count = sym;
			s->block_len = block_len;
			flush_block(s, false);
			sym = 0;
			block_len = 0;
		}
	}
	s->pos = pos;
	s->sym_count = sym;
	s->block_len = block_len;
}

/* Lazy parsing (levels 4-9): a match is emitted only if the match at the
 * next position is not longer. */
static void compress_lazy(struct deflate_compressor *s, bool finishing)
{
	const uint8_t *w = s->window;
	for (;;) {
		uint32_t pos = s->pos;
		uint32_t look = s->win_end - pos;
		if (look == 0 || (look < MIN_LOOKAHEAD && !finishing))
			break;
		uint32_t cur_len = 0, cur_dist = 0;
		if (look >= HASH_BYTES) {
			uint32_t cand = insert_pos(s, pos);
			if (cand && s->prev_len < s->cfg.lazy_limit) {
				uint32_t floor = RT_MAX(s->prev_len, (uint32_t)HASH_BYTES - 1);
				uint32_t len = find_match(s, pos, cand, floor, RT_MIN(look, (uint32_t)MAX_MATCH),
							  &cur_dist);
				if (len > floor)
					cur_len = len;
			}
		}
		if (s->prev_len >= HASH_BYTES && cur_len <= s->prev_len) {
			uint32_t end = pos - 1 + s->prev_len;
			emit_match(s, s->prev_len, s->prev_dist);
			for (uint32_t p = pos + 1; p < end && p + HASH_BYTES <= s->win_end; p++)
				insert_pos(s, p);
			s->pos = end;
			s->prev_len = 0;
			s->pending = false;
			continue;
		}
		if (s->pending)
			emit_literal(s, w[pos - 1]);
		s->pending = true;
		s->prev_len = cur_len;
		s->prev_dist = cur_dist;
		s->pos = pos + 1;
	}
	if (finishing && s->pending) {
		emit_literal(s, w[s->pos - 1]);
		s->pending = false;
		s->prev_len = 0;
	}
}

static void compress_window(struct deflate_compressor *s, bool finishing)
{
	if (s->cfg.lazy_limit)
		compress_lazy(s, finishing);
	else
		compress_greedy(s, finishing);
}

/* Positions in a[0..n) moved down by WIN_SIZE, those slid out to 0 (none).
 * Inlined with a constant n, it is a loop of vector saturating subtractions. */
static inline void rebase(uint16_t *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		a[i] = (uint16_t)(a[i] >= WIN_SIZE ? a[i] - WIN_SIZE : 0);
}

/* Drops the oldest 32 KiB of the buffer and rebases every stored position. */
static void slide_window(struct deflate_compressor *s)
{
	rt_memmove(s->window, s->window + WIN_SIZE, s->win_end - WIN_SIZE);
	s->win_end -= WIN_SIZE;
	s->pos -= WIN_SIZE;
	s->block_start -= (int32_t)WIN_SIZE;
	rebase(s->prev, WIN_SIZE);
	if (s->hash_bits == HASH_BITS)
		rebase(s->head, 1u << HASH_BITS); /* always so: only inputs past 64 KiB slide */
	else
		for (uint32_t i = 0; i < (1u << s->hash_bits); i++)
			s->head[i] = (uint16_t)(s->head[i] >= WIN_SIZE ? s->head[i] - WIN_SIZE : 0);
}

/* ---- the stream ---- */

int deflate_compressor_init(struct deflate_compressor *s, int level, struct rt_buf *out,
			    size_t input_bytes)
{
	/* At least as many entries as input positions (up to the maximum). */
	uint32_t hash_bits = HASH_BITS;
	if (input_bytes != 0)
		while (hash_bits > HASH_MIN_BITS && ((size_t)1 << (hash_bits - 1)) >= input_bytes)
			hash_bits--;
	/* What a stream reads before writing: the hash heads in use and
	 * everything from the frequencies on.  The window, prev[] and the
	 * symbol buffer are read only where this stream wrote them (matches
	 * are compared up to the input's end, chains only reach inserted
	 * positions), so a state left by an earlier stream needs no more. */
	rt_memset(s->head, 0, ((size_t)1 << hash_bits) * sizeof(s->head[0]));
	rt_memset(s->lit_freq, 0, sizeof(*s) - offsetof(struct deflate_compressor, lit_freq));
	init_tables(s);
	s->cfg = level_configs[level];
	s->hash_bits = hash_bits;
	s->out = out;
	return 0;
}

int deflate_compressor_put_bytes(struct deflate_compressor *s, const void *p, size_t n)
{
	if (s->error || !out_reserve(s, n))
		return s->error;
	rt_memcpy(s->bw.p, p, n);
	s->bw.p += n;
	out_commit(s);
	return 0;
}

int deflate_compressor_write(struct deflate_compressor *s, const void *data, size_t n)
{
	if (s->finished)
		fail(s, -EINVAL);
	const uint8_t *p = data;
	while (n > 0 && !s->error) {
		if (s->win_end == BUF_SIZE)
			slide_window(s);
		uint32_t take = (uint32_t)RT_MIN(n, (size_t)(BUF_SIZE - s->win_end));
		rt_memcpy(s->window + s->win_end, p, take);
		s->win_end += take;
		p += take;
		n -= take;
		compress_window(s, false);
	}
	return s->error;
}

int deflate_compressor_finish(struct deflate_compressor *s)
{
	if (s->finished)
		fail(s, -EINVAL);
	if (s->error)
		return s->error;
	compress_window(s, true);
	if (s->error)
		return s->error;
	flush_block(s, true);
	s->finished = true;
	if (s->error || !out_reserve(s, 8))
		return s->error;
	align_bytes(&s->bw);
	out_commit(s);
	return 0;
}
