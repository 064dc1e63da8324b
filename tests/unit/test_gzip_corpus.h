/* Deterministic inputs for the gzip tests and benchmark (hosted code).
 *
 * corpus_pprof_body() synthesises an uncompressed pprof Profile message with
 * the shape of a real one: a string table of Go/C++-like symbol and file
 * names, functions, locations with lines, one mapping, and samples whose
 * stacks come from a random call tree (shared root-side prefixes, packed
 * location ids leaf first, two values, a thread id label).
 */
#ifndef STOWAWAY_TEST_GZIP_CORPUS_H
#define STOWAWAY_TEST_GZIP_CORPUS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct corpus_buf {
	uint8_t *data;
	size_t len, cap;
};

static inline void corpus_reserve(struct corpus_buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra)
		cap *= 2;
	b->data = realloc(b->data, cap);
	if (!b->data) {
		fprintf(stderr, "corpus: out of memory\n");
		exit(2);
	}
	b->cap = cap;
}

static inline void corpus_put(struct corpus_buf *b, const void *p, size_t n)
{
	corpus_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* Appends a copy of b[off..off+n) (the source may move when b grows). */
static inline void corpus_put_own(struct corpus_buf *b, size_t off, size_t n)
{
	corpus_reserve(b, n);
	memcpy(b->data + b->len, b->data + off, n);
	b->len += n;
}

static inline uint64_t corpus_rng(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

static inline void corpus_random(struct corpus_buf *b, size_t n, uint64_t seed)
{
	uint64_t st = seed | 1;
	corpus_reserve(b, n);
	for (size_t i = 0; i < n; i++)
		b->data[b->len + i] = (uint8_t)(corpus_rng(&st) >> 32);
	b->len += n;
}

static const char *const corpus_words[] = {
	"the", "profiler", "samples", "every", "thread", "of", "a", "process", "and", "writes",
	"compressed", "stacks", "to", "disk", "when", "period", "ends", "with", "labels", "for",
	"span", "endpoint", "heap", "allocation", "wall", "time", "is", "weighted", "by", "interval",
	"container", "kernel", "signal", "handler", "never", "blocks", "in", "system", "call",
};

static inline void corpus_text(struct corpus_buf *b, size_t n, uint64_t seed)
{
	uint64_t st = seed | 1;
	size_t start = b->len;
	size_t col = 0;
	while (b->len - start < n) {
		const char *w = corpus_words[corpus_rng(&st) % (sizeof(corpus_words) / sizeof(corpus_words[0]))];
		corpus_put(b, w, strlen(w));
		col += strlen(w) + 1;
		if (col > 70) {
			corpus_put(b, ".\n", 2);
			col = 0;
		} else {
			corpus_put(b, " ", 1);
		}
	}
	b->len = start + n;
}

/* ---- protobuf writing ---- */

static inline void pb_varint(struct corpus_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	corpus_put(b, tmp, n);
}

static inline void pb_key(struct corpus_buf *b, uint32_t field, uint32_t wire) { pb_varint(b, (uint64_t)field << 3 | wire); }

static inline void pb_uint(struct corpus_buf *b, uint32_t field, uint64_t v)
{
	pb_key(b, field, 0);
	pb_varint(b, v);
}

static inline void pb_bytes(struct corpus_buf *b, uint32_t field, const void *p, size_t n)
{
	pb_key(b, field, 2);
	pb_varint(b, n);
	corpus_put(b, p, n);
}

static inline void pb_sub(struct corpus_buf *b, uint32_t field, struct corpus_buf *sub)
{
	pb_bytes(b, field, sub->data, sub->len);
	sub->len = 0;
}

/* A pprof body of about `target` bytes. */
static inline void corpus_pprof_body(struct corpus_buf *out, size_t target, uint64_t seed)
{
	uint64_t st = seed | 1;
	struct corpus_buf msg = {0}, sub = {0}, inner = {0};
	enum { NFUNC = 1500, NLOC = 4000, MAXDEPTH = 48 };
	static uint32_t loc_func[NLOC + 1];
	static uint32_t parent[NLOC + 1];
	static const char *const pkgs[] = {"net/http", "runtime", "encoding/json", "github.com/acme/shop/cart",
					   "github.com/acme/shop/db", "std::__1", "google.golang.org/grpc",
					   "compress/flate", "sync", "main"};
	static const char *const verbs[] = {"Serve", "Handle", "Read", "Write", "Marshal", "Decode", "lock",
					    "mallocgc", "Query", "Exec", "process", "flush", "encode", "sweep"};
	char name[160];

	/* Strings: 0 "", 1..6 fixed names, then per function its name and file. */
	const char *fixed_strings[] = {"", "samples", "count", "cpu", "nanoseconds", "thread id", "/usr/bin/app"};
	/* sample_type x2 */
	pb_uint(&sub, 1, 1);
	pb_uint(&sub, 2, 2);
	pb_sub(&msg, 1, &sub);
	pb_uint(&sub, 1, 3);
	pb_uint(&sub, 2, 4);
	pb_sub(&msg, 1, &sub);

	/* Call tree over locations: each location has a parent (0: root). */
	for (uint32_t l = 1; l <= NLOC; l++) {
		loc_func[l] = 1 + (uint32_t)(corpus_rng(&st) % NFUNC);
		/* Mostly extend a recent node (deep stacks), sometimes branch anywhere. */
		if (l < 20)
			parent[l] = 0;
		else if (corpus_rng(&st) % 4 == 0)
			parent[l] = 1 + (uint32_t)(corpus_rng(&st) % (l - 1));
		else
			parent[l] = l - 1 - (uint32_t)(corpus_rng(&st) % 16);
	}
	/* Samples until the target size is reached (leaving room for tables). */
	size_t tables_estimate = NFUNC * 90 + NLOC * 24;
	while (msg.len + tables_estimate < target) {
		/* Hot leaves: skewed towards the deep end of the tree. */
		uint64_t r = corpus_rng(&st) % NLOC;
		uint32_t leaf = NLOC - (uint32_t)(r * r / NLOC);
		uint32_t depth = 0;
		for (uint32_t l = leaf; l && depth < MAXDEPTH; l = parent[l], depth++)
			pb_varint(&inner, l);
		pb_sub(&sub, 1, &inner);
		uint64_t count = 1 + corpus_rng(&st) % 4;
		pb_varint(&inner, count);
		pb_varint(&inner, count * 10000000u + corpus_rng(&st) % 1000);
		pb_sub(&sub, 2, &inner);
		pb_uint(&inner, 1, 5);
		pb_uint(&inner, 3, 1000 + corpus_rng(&st) % 16);
		pb_sub(&sub, 3, &inner);
		pb_sub(&msg, 2, &sub);
	}
	/* mapping */
	pb_uint(&sub, 1, 1);
	pb_uint(&sub, 2, 0x400000);
	pb_uint(&sub, 3, 0x2000000);
	pb_uint(&sub, 5, 6);
	pb_uint(&sub, 7, 1);
	pb_sub(&msg, 3, &sub);
	/* locations */
	for (uint32_t l = 1; l <= NLOC; l++) {
		pb_uint(&sub, 1, l);
		pb_uint(&sub, 2, 1);
		pb_uint(&sub, 3, 0x400000 + (uint64_t)loc_func[l] * 0x340 + corpus_rng(&st) % 0x300);
		pb_uint(&inner, 1, loc_func[l]);
		pb_uint(&inner, 2, 10 + corpus_rng(&st) % 900);
		pb_sub(&sub, 4, &inner);
		pb_sub(&msg, 4, &sub);
	}
	/* functions: name = 7 + 2*(f-1), file = 8 + 2*(f-1) */
	for (uint32_t f = 1; f <= NFUNC; f++) {
		pb_uint(&sub, 1, f);
		pb_uint(&sub, 2, 7 + 2 * (uint64_t)(f - 1));
		pb_uint(&sub, 3, 7 + 2 * (uint64_t)(f - 1));
		pb_uint(&sub, 4, 8 + 2 * (uint64_t)(f - 1));
		pb_uint(&sub, 5, 1 + corpus_rng(&st) % 500);
		pb_sub(&msg, 5, &sub);
	}
	for (uint32_t i = 0; i < sizeof(fixed_strings) / sizeof(fixed_strings[0]); i++)
		pb_bytes(&msg, 6, fixed_strings[i], strlen(fixed_strings[i]));
	for (uint32_t f = 1; f <= NFUNC; f++) {
		const char *pkg = pkgs[corpus_rng(&st) % (sizeof(pkgs) / sizeof(pkgs[0]))];
		const char *verb = verbs[corpus_rng(&st) % (sizeof(verbs) / sizeof(verbs[0]))];
		int n = snprintf(name, sizeof(name), "%s.(*%s%u).%s%u", pkg, "Type", f % 37, verb, f);
		pb_bytes(&msg, 6, name, (size_t)n);
		n = snprintf(name, sizeof(name), "/go/src/%s/%s_%u.go", pkg, verb, f % 53);
		pb_bytes(&msg, 6, name, (size_t)n);
	}
	pb_uint(&msg, 9, 1700000000000000000ull + corpus_rng(&st) % 1000000000ull);
	pb_uint(&msg, 10, 60000000000ull);
	pb_uint(&sub, 1, 3);
	pb_uint(&sub, 2, 4);
	pb_sub(&msg, 11, &sub);
	pb_uint(&msg, 12, 10000000);
	corpus_put(out, msg.data, msg.len);
	free(msg.data);
	free(sub.data);
	free(inner.data);
}

#endif
