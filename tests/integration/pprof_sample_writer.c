/* Writes sample profiles for tests/integration/pprof_tools.py, which checks
 * them with independent tools (go tool pprof, protoc --decode_raw).
 *   pprof_sample_writer OUTDIR
 * Files: cpu.pprof (cpu kind, symbolized), cpu.pb.gz (the same, gzip'ed by
 * our deflate), combined.pprof (every slot side by side), overflow.pprof
 * (alloc kind past the recorder's sample bound).  The expected values are
 * documented next to each sample and repeated in the script. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "deflate/deflate.h"
#include "encode/pprof.h"

#define APP_START 0x400000ull
#define APP_LIMIT 0x500000ull
#define LIBC_START 0x7f1000000000ull
#define LIBC_LIMIT 0x7f1000200000ull

/* Functions of the fake app: pc 0x40N0xx -> names[N]. */
static const char *const app_functions[] = {"main", "serve", "parse", "compress", "lookup"};

static bool resolve(void *ctx, uint64_t pc, struct sw_frame_info *out)
{
	(void)ctx;
	if (pc >= APP_START && pc < APP_START + 0x5000) {
		out->map_start = APP_START;
		out->map_limit = APP_LIMIT;
		out->map_offset = 0;
		out->map_path = "/opt/demo/app";
		out->build_id = "aabbccddeeff00112233445566778899aabbccdd";
		out->function = app_functions[(pc - APP_START) >> 12];
		out->file = "app.c";
		out->line = (int64_t)((pc & 0xfff) + 1);
		return true;
	}
	if (pc >= LIBC_START && pc < LIBC_LIMIT) {
		/* libc without symbols: module + address only. */
		out->map_start = LIBC_START;
		out->map_limit = LIBC_LIMIT;
		out->map_path = "/lib/libc.so.6";
		out->build_id = "";
		return true;
	}
	return false;
}

static bool write_file(const char *dir, const char *name, const struct rt_buf *b)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(path);
		return false;
	}
	bool ok = rt_write_all(fd, b->data, b->len) == 0;
	close(fd);
	return ok;
}

static void add(struct profile *p, const uint64_t *pcs, uint32_t depth, const struct sw_value *v, uint32_t nv,
		const struct sw_label *l, uint32_t nl)
{
	struct sw_sample s = {pcs, depth, v, nv, l, nl};
	if (profile_add(p, &s) == PROFILE_ADD_INVALID)
		fprintf(stderr, "invalid sample\n");
}

static bool encode_to(const char *dir, const char *name, const struct profile *p, uint32_t mask,
		      const struct pprof_opts *o, bool gzip)
{
	struct rt_buf b = {0};
	bool ok = pprof_encode(p, mask, o, resolve, NULL, &b) == 0 && write_file(dir, name, &b);
	if (ok && gzip) {
		struct rt_buf gz = {0};
		char gzname[256];
		snprintf(gzname, sizeof(gzname), "%.*s.pb.gz", (int)(strlen(name) - 6), name);
		ok = gz_compress(b.data, b.len, GZ_LEVEL_DEFAULT, &gz) == 0 && write_file(dir, gzname, &gz);
		rt_buf_free(&gz);
	}
	rt_buf_free(&b);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	const char *dir = argv[1];
	struct profile *p = profile_create(NULL);
	profile_set_times(p, 1700000000000000000ull, 1700000060000000000ull);

	uint64_t parse[3] = {0x402010, 0x401010, 0x400010};           /* main;serve;parse */
	uint64_t compress[3] = {0x403010, 0x401020, 0x400010};        /* main;serve;compress */
	uint64_t in_libc[3] = {LIBC_START + 0x1234, 0x404010, 0x400010}; /* main;lookup;libc+0x1234 */
	uint64_t deep[3] = {0x402010, 0x401010, SW_PC_TRUNCATED};     /* [truncated];serve;parse */
	/* cpu: parse 300ms/30, compress 500ms/50, libc 100ms/10, deep 40ms/4 */
	struct sw_value c_parse[2] = {{SW_V_CPU_SAMPLES, 30}, {SW_V_CPU_TIME, 300000000}};
	struct sw_value c_compress[2] = {{SW_V_CPU_SAMPLES, 50}, {SW_V_CPU_TIME, 500000000}};
	struct sw_value c_libc[2] = {{SW_V_CPU_SAMPLES, 10}, {SW_V_CPU_TIME, 100000000}};
	struct sw_value c_deep[2] = {{SW_V_CPU_SAMPLES, 4}, {SW_V_CPU_TIME, 40000000}};
	/* wall: compress 2s, alloc: parse 8 MiB in 16 samples */
	struct sw_value w_compress[2] = {{SW_V_WALL_SAMPLES, 200}, {SW_V_WALL_TIME, 2000000000}};
	struct sw_value a_parse[2] = {{SW_V_ALLOC_SAMPLES, 16}, {SW_V_ALLOC_SPACE, 8 << 20}};
	struct sw_label l_worker[3] = {{SW_LABEL_THREAD_ID, NULL, 4242, NULL},
				       {SW_LABEL_THREAD_NAME, "worker", 0, NULL},
				       {SW_LABEL_SPAN_ID, NULL, 77, NULL}};
	struct sw_label l_main[2] = {{SW_LABEL_THREAD_ID, NULL, 4241, NULL},
				     {SW_LABEL_STATE, "had cpu", 0, NULL}};
	add(p, parse, 3, c_parse, 2, l_worker, 3);
	add(p, compress, 3, c_compress, 2, l_main, 2);
	add(p, in_libc, 3, c_libc, 2, l_main, 2);
	add(p, deep, 3, c_deep, 2, NULL, 0);
	add(p, compress, 3, w_compress, 2, l_main, 2);
	add(p, parse, 3, a_parse, 2, l_worker, 3);

	struct pprof_opts o;
	pprof_opts_for_kind(&o, SW_KIND_CPU, 10000000);
	const char *comments[1] = {"stowaway sample writer"};
	o.comments = comments;
	o.n_comments = 1;
	bool ok = encode_to(dir, "cpu.pprof", p, sw_kind_value_mask(SW_KIND_CPU), &o, true);

	struct pprof_opts oc;
	pprof_opts_for_kind(&oc, SW_KIND_CPU, 10000000);
	uint32_t all = sw_kind_value_mask(SW_KIND_CPU) | sw_kind_value_mask(SW_KIND_WALL) |
		       sw_kind_value_mask(SW_KIND_ALLOC);
	ok = ok && encode_to(dir, "combined.pprof", p, all, &oc, false);
	profile_release(p);

	/* 20 distinct alloc stacks through a bound of 5: 15 go to [overflow]. */
	struct profile_limits lim = {.max_samples = 5};
	struct profile *po = profile_create(&lim);
	struct sw_value a1[2] = {{SW_V_ALLOC_SAMPLES, 1}, {SW_V_ALLOC_SPACE, 1000}};
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t pcs[2] = {0x402000 + i * 8, 0x400010};
		add(po, pcs, 2, a1, 2, NULL, 0);
	}
	struct pprof_opts oa;
	pprof_opts_for_kind(&oa, SW_KIND_ALLOC, 524288);
	ok = ok && encode_to(dir, "overflow.pprof", po, sw_kind_value_mask(SW_KIND_ALLOC), &oa, false);
	profile_release(po);
	return ok ? 0 : 1;
}
