/* Driver for tests/bench/bench_gzip.sh.
 *
 *   bench_gzip_driver pprof SIZE SEED OUT   write a synthetic pprof body
 *   bench_gzip_driver time FILE LEVEL REPS  compress FILE REPS times with our
 *       gzip; prints "size=<bytes> best_ns=<fastest run>"
 *   bench_gzip_driver compress FILE LEVEL OUT  write our gzip of FILE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int main(int argc, char **argv)
{
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
	fprintf(stderr, "usage: %s pprof SIZE SEED OUT | time FILE LEVEL REPS | compress FILE LEVEL OUT\n",
		argv[0]);
	return 2;
}
