/* Driver for tests/bench/bench_gzip.sh.
 *
 *   bench_gzip_driver pprof SIZE SEED OUT   write a synthetic pprof body
 *   bench_gzip_driver time FILE LEVEL REPS  compress FILE REPS times with our
 *       gzip; prints "size=<bytes> best_ns=<fastest run>"
 *   bench_gzip_driver compress FILE LEVEL OUT  write our gzip of FILE
 *   bench_gzip_driver inflate FILE REPS     decompress FILE (a gzip member,
 *       a zlib stream or raw DEFLATE) REPS times with ours and with zlib,
 *       interleaved; checks both give the same bytes; prints
 *       "out=<bytes> ours_ns=<fastest> zlib_ns=<fastest>"
 *   bench_gzip_driver inflate-once FILE     decompress FILE once with ours
 *       (for callgrind: --toggle-collect=inflate_ours); prints "out=<bytes>"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "deflate/deflate.h"
#include "unit/test_gzip_corpus.h"

static int read_all(const char *path, struct corpus_buf *b)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	uint8_t tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		corpus_put(b, tmp, n);
	int err = ferror(f);
	fclose(f);
	return err ? -1 : 0;
}

static int write_all(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(p, 1, n, f);
	return (fclose(f) == 0 && w == n) ? 0 : -1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum { FORM_RAW, FORM_ZLIB, FORM_GZIP };

static int form_of(const uint8_t *p, size_t n)
{
	if (gzip_is_gzip(p, n))
		return FORM_GZIP;
	return zlib_header_ok(p, n) ? FORM_ZLIB : FORM_RAW;
}

/* zlib's inflate of the whole stream into *out (grown as needed). */
static int inflate_zlib(const uint8_t *in, size_t n, int form, uint8_t **out, size_t *cap, size_t *len)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	int bits = form == FORM_RAW ? -15 : form == FORM_ZLIB ? 15 : 31;
	if (inflateInit2(&z, bits) != Z_OK)
		return -1;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	int rc;
	do {
		if (z.total_out == *cap) {
			size_t ncap = *cap ? 2 * *cap : 1u << 20;
			uint8_t *p = realloc(*out, ncap);
			if (!p)
				abort();
			*out = p;
			*cap = ncap;
		}
		z.next_out = *out + z.total_out;
		z.avail_out = (uInt)(*cap - z.total_out);
		rc = inflate(&z, Z_FINISH);
	} while (rc == Z_BUF_ERROR && z.avail_out == 0);
	*len = z.total_out;
	inflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -1;
}

/* Not static, not inlined: callgrind counts from its entry. */
__attribute__((noinline)) int inflate_ours(const uint8_t *in, size_t n, int form, uint8_t *out, size_t cap,
					   size_t *len);
__attribute__((noinline)) int inflate_ours(const uint8_t *in, size_t n, int form, uint8_t *out, size_t cap,
					   size_t *len)
{
	size_t used = 0;
	if (form == FORM_GZIP)
		return gzip_decompress(in, n, out, cap, &used, len);
	if (form == FORM_ZLIB)
		return zlib_decompress(in, n, out, cap, &used, len);
	return deflate_decompress(in, n, out, cap, &used, len);
}

static int inflate_mode(const char *path, int reps, bool once)
{
	struct corpus_buf in = {0};
	if (read_all(path, &in) != 0) {
		fprintf(stderr, "cannot read %s\n", path);
		return 1;
	}
	int form = form_of(in.data, in.len);
	uint8_t *want = NULL, *out = NULL;
	size_t want_cap = 0, want_len = 0, len = 0;
	if (inflate_zlib(in.data, in.len, form, &want, &want_cap, &want_len) != 0) {
		fprintf(stderr, "zlib cannot inflate %s\n", path);
		return 1;
	}
	out = malloc(want_len + 1);
	if (!out)
		abort();
	uint64_t ours = UINT64_MAX, theirs = UINT64_MAX;
	for (int r = 0; r < reps; r++) {
		uint64_t t0 = now_ns();
		int rc = inflate_ours(in.data, in.len, form, out, want_len + 1, &len);
		uint64_t dt = now_ns() - t0;
		if (rc != DEFLATE_OK || len != want_len || memcmp(out, want, len) != 0) {
			fprintf(stderr, "%s: ours differs from zlib (rc %d, %zu bytes, want %zu)\n", path,
				rc, len, want_len);
			return 1;
		}
		ours = dt < ours ? dt : ours;
		if (once)
			break;
		size_t zlen = 0;
		t0 = now_ns();
		if (inflate_zlib(in.data, in.len, form, &want, &want_cap, &zlen) != 0)
			return 1;
		dt = now_ns() - t0;
		theirs = dt < theirs ? dt : theirs;
	}
	if (once)
		printf("out=%zu\n", want_len);
	else
		printf("out=%zu ours_ns=%llu zlib_ns=%llu\n", want_len, (unsigned long long)ours,
		       (unsigned long long)theirs);
	free(out);
	free(want);
	free(in.data);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "inflate") == 0)
		return inflate_mode(argv[2], atoi(argv[3]), false);
	if (argc == 3 && strcmp(argv[1], "inflate-once") == 0)
		return inflate_mode(argv[2], 1, true);
	if (argc == 5 && strcmp(argv[1], "pprof") == 0) {
		struct corpus_buf b = {0};
		corpus_pprof_body(&b, strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10));
		int rc = write_all(argv[4], b.data, b.len);
		free(b.data);
		return rc ? 1 : 0;
	}
	if (argc == 5 && (strcmp(argv[1], "time") == 0 || strcmp(argv[1], "compress") == 0)) {
		struct corpus_buf in = {0};
		if (read_all(argv[2], &in) != 0) {
			fprintf(stderr, "cannot read %s\n", argv[2]);
			return 1;
		}
		int level = atoi(argv[3]);
		int reps = strcmp(argv[1], "time") == 0 ? atoi(argv[4]) : 1;
		uint64_t best = UINT64_MAX;
		struct rt_buf out = {0};
		for (int r = 0; r < reps; r++) {
			rt_buf_reset(&out);
			uint64_t t0 = now_ns();
			int rc = gz_compress(in.data, in.len, level, &out);
			uint64_t dt = now_ns() - t0;
			if (rc != 0) {
				fprintf(stderr, "gz_compress: %d\n", rc);
				return 1;
			}
			if (dt < best)
				best = dt;
		}
		int rc = 0;
		if (strcmp(argv[1], "time") == 0)
			printf("size=%zu best_ns=%llu\n", out.len, (unsigned long long)best);
		else
			rc = write_all(argv[4], out.data, out.len);
		rt_buf_free(&out);
		free(in.data);
		return rc ? 1 : 0;
	}
	fprintf(stderr, "usage: %s pprof SIZE SEED OUT | time FILE LEVEL REPS | compress FILE LEVEL OUT | "
		"inflate FILE REPS | inflate-once FILE\n",
		argv[0]);
	return 2;
}
