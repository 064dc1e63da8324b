/* Allocation failure, injected by the test build of the runtime allocator
 * (rt_heap_fail_at, rt/heap.c): for every n, the recorder, the pprof
 * encoder, gzip and the CFI table builder run with the nth allocation
 * failing (once, and from then on) and must return a clean error or a
 * correct result, never crash, and leave no block allocated.  The loop
 * stops at the first n past the operation's last allocation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "deflate/deflate.h"
#include "encode/pprof.h"
#include "profile/profile.h"
#include "symbols/elf.h"
#include "unwind/cfi.h"

/* Allocation numbers tried per operation, at most (each operation here
 * makes fewer; the loop fails the check below if one makes more). */
#define MAX_N 20000

struct outcome {
	unsigned ok, failed; /* runs that succeeded, runs that returned an error */
};

/* Runs op with allocation n failing, for n = 1, 2, ... until a run makes
 * fewer than n allocations (no failure was injected, so it must succeed).
 * op returns 0 on success or a negative errno, and checks its own result. */
static struct outcome fail_each(int (*op)(void), bool persistent)
{
	struct outcome o = {0, 0};
	for (uint64_t n = 1; n <= MAX_N; n++) {
		long live = rt_heap_live_allocations();
		rt_heap_fail_at(n, persistent);
		int rc = op();
		uint64_t made = rt_heap_alloc_count();
		rt_heap_fail_at(0, false);
		if (rt_heap_live_allocations() != live) {
			fprintf(stderr, "  leak: %ld blocks after failing allocation %llu\n",
				rt_heap_live_allocations() - live, (unsigned long long)n);
			CHECK(rt_heap_live_allocations() == live);
			return o;
		}
		CHECK(rc == 0 || rc == -ENOMEM);
		if (rc == 0)
			o.ok++;
		else
			o.failed++;
		if (made < n) { /* nothing failed */
			CHECK(rc == 0);
			return o;
		}
	}
	CHECK(!"more allocations than MAX_N");
	return o;
}

static void report(const char *what, struct outcome once, struct outcome always)
{
	printf("  %s: %u allocations; failing one: %u ok, %u errors; failing all from n: %u ok, %u errors\n",
	       what, once.ok + once.failed - 1, once.ok, once.failed, always.ok, always.failed);
	CHECK(once.ok + once.failed > 1); /* the operation allocates at all */
	CHECK(always.failed > 0);
}

/* ---- the recorder ---- */

#define REC_SAMPLES 400

/* One sample with its own storage. */
struct test_sample {
	uint64_t pcs[8];
	struct sw_value v[1];
	struct sw_label l[2];
	char name[32];
	struct sw_sample s;
};

/* Sample i: one of 97 frames at each depth, one of 37 thread names. */
static void fill_sample(uint32_t i, struct test_sample *t)
{
	for (uint32_t d = 0; d < 8; d++)
		t->pcs[d] = 0x400000 + (uint64_t)((i * 7 + d * 13) % 97) * 16;
	t->v[0] = (struct sw_value){.slot = SW_V_CPU_SAMPLES, .value = 1 + i % 3};
	snprintf(t->name, sizeof(t->name), "thread-%u", i % 37);
	t->l[0] = (struct sw_label){.key = SW_LABEL_THREAD_NAME, .str = t->name};
	t->l[1] = (struct sw_label){.key = SW_LABEL_THREAD_ID, .num = i % 11};
	t->s = (struct sw_sample){.pcs = t->pcs, .depth = 1 + i % 8, .values = t->v, .n_values = 1,
				  .labels = t->l, .n_labels = 2};
}

static int64_t cpu_total(const struct profile *p)
{
	int64_t sum = 0;
	struct profile_sample_view v;
	for (uint32_t i = 0; i < profile_sample_count(p); i++)
		if (profile_sample_get(p, i, &v))
			sum += v.values[SW_V_CPU_SAMPLES];
	return sum;
}

/* Adds samples, swaps, adds more: every accepted value is in exactly one
 * of the two profiles (an add that finds no memory lands in "[overflow]"). */
static int record(void)
{
	struct recorder *r = recorder_create(NULL);
	if (!r)
		return -ENOMEM;
	int64_t want = 0;
	struct profile *first = NULL;
	for (uint32_t i = 0; i < REC_SAMPLES; i++) {
		struct test_sample t;
		fill_sample(i, &t);
		if (recorder_add(r, &t.s) != PROFILE_ADD_INVALID)
			want += t.v[0].value;
		if (i == REC_SAMPLES / 2 && !first)
			first = recorder_swap(r); /* NULL: the active profile keeps recording */
	}
	struct profile *second = recorder_swap(r);
	int rc = 0;
	if (!second) {
		rc = -ENOMEM;
	} else {
		int64_t got = cpu_total(second) + (first ? cpu_total(first) : 0);
		CHECK(got == want);
		profile_release(second);
	}
	if (first)
		profile_release(first);
	recorder_destroy(r);
	return rc;
}

static void test_recorder(void)
{
	struct outcome once = fail_each(record, false);
	struct outcome always = fail_each(record, true);
	report("recorder", once, always);
}

/* ---- the pprof encoder ---- */

static struct profile *encoder_input;

static int encode(void)
{
	struct rt_buf out = {0};
	struct pprof_opts o;
	pprof_opts_for_kind(&o, SW_KIND_CPU, 10000000);
	int rc = pprof_encode(encoder_input, sw_kind_value_mask(SW_KIND_CPU), &o, NULL, NULL, &out);
	if (rc == 0)
		CHECK(out.len > 100 && !out.failed);
	rt_buf_free(&out);
	return rc;
}

static void test_encoder(void)
{
	encoder_input = profile_create(NULL);
	CHECK(encoder_input != NULL);
	if (!encoder_input)
		return;
	for (uint32_t i = 0; i < REC_SAMPLES; i++) {
		struct test_sample t;
		fill_sample(i, &t);
		CHECK(profile_add(encoder_input, &t.s) == PROFILE_ADD_OK);
	}
	struct outcome once = fail_each(encode, false);
	struct outcome always = fail_each(encode, true);
	report("pprof encoder", once, always);
	profile_release(encoder_input);
}

/* ---- gzip ---- */

#define GZ_INPUT 300000
static uint8_t gz_input[GZ_INPUT];
static uint8_t gz_back[GZ_INPUT];

/* Streamed in chunks; the output must inflate back to the input. */
static int gzip_stream(void)
{
	struct rt_buf out = {0};
	struct gz_stream s;
	int rc = gz_init(&s, GZ_LEVEL_DEFAULT, &out);
	bool started = s.state != NULL;
	for (size_t off = 0; rc == 0 && off < GZ_INPUT; off += 70000)
		rc = gz_write(&s, gz_input + off, GZ_INPUT - off < 70000 ? GZ_INPUT - off : 70000);
	if (rc == 0)
		rc = gz_finish(&s);
	if (rc == 0) {
		size_t used = 0, n = 0;
		CHECK(gzip_decompress(out.data, out.len, gz_back, GZ_INPUT, &used, &n) == DEFLATE_OK);
		CHECK(n == GZ_INPUT && memcmp(gz_back, gz_input, GZ_INPUT) == 0);
	} else if (started) {
		/* A failed stream stays failed. */
		CHECK(gz_write(&s, gz_input, 1) == rc);
		CHECK(gz_finish(&s) == rc);
	}
	gz_destroy(&s);
	rt_buf_free(&out);
	return rc;
}

static void test_gzip(void)
{
	uint32_t x = 1;
	for (size_t i = 0; i < GZ_INPUT; i++) {
		x = x * 1103515245u + 12345u;
		gz_input[i] = (x >> 16) % 5 ? (uint8_t)("profile "[i % 8]) : (uint8_t)(x >> 24);
	}
	struct outcome once = fail_each(gzip_stream, false);
	struct outcome always = fail_each(gzip_stream, true);
	report("gzip", once, always);
}

/* ---- the CFI table builder ---- */

static uint8_t *elf_bytes;
static size_t elf_size;
static struct elf_section eh;
static uint64_t load_lo, load_hi;

/* NULL is the builder's error; a table must answer for its own code. */
static int build_cfi(void)
{
	struct cfi_table *t = cfi_table_build(elf_bytes + eh.offset, eh.size, eh.addr, load_lo,
					      load_hi - load_lo);
	if (!t)
		return -ENOMEM;
	CHECK(t->nrows > 100);
	CHECK(cfi_table_lookup(t, t->base + t->rows[t->nrows / 2].pc) != NULL ||
	      t->rows[t->nrows / 2].kind == CFI_NONE);
	cfi_table_free(t);
	return 0;
}

static void test_cfi_table(void)
{
	FILE *f = fopen("/proc/self/exe", "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	elf_size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	elf_bytes = malloc(elf_size);
	CHECK(elf_bytes && fread(elf_bytes, 1, elf_size, f) == elf_size);
	fclose(f);
	struct elf_image img;
	bool ok = elf_bytes && elf_open(&img, elf_bytes, elf_size) && elf_eh_frame(&img, &eh) &&
		  elf_load_range(&img, &load_lo, &load_hi);
	CHECK(ok);
	if (ok) {
		struct outcome once = fail_each(build_cfi, false);
		struct outcome always = fail_each(build_cfi, true);
		report("CFI table", once, always);
	}
	free(elf_bytes);
}

int main(void)
{
	RUN(test_recorder);
	RUN(test_encoder);
	RUN(test_gzip);
	RUN(test_cfi_table);
	return CHECK_DONE();
}
