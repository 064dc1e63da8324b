/* Encoder benchmark: a profile of 10k distinct stacks of depth 30 (the
 * recorder's memory for it, the add rate), then pprof encode time and
 * size, then gzip time and size (times are this thread's CPU time).  Prints "BENCH encode: ..." lines.
 *   bench_encode [OUT.pb.gz]  also writes the compressed profile (for the
 *   script's comparison with go tool pprof). */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "deflate/deflate.h"
#include "encode/pprof.h"

#define STACKS 10000
#define DEPTH 30
#define FUNCTIONS 4096
#define ROUNDS 20

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: stable on a busy machine */
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char names[FUNCTIONS][32];

/* A symbolizer stand-in: one mapping, names from a table. */
static bool resolve(void *ctx, uint64_t pc, struct sw_frame_info *out)
{
	(void)ctx;
	out->map_start = 0x10000000;
	out->map_limit = 0x30000000;
	out->map_path = "/usr/lib/bench/libapp.so";
	out->build_id = "00112233445566778899aabbccddeeff00112233";
	out->function = names[(pc >> 4) % FUNCTIONS];
	return true;
}

static bool write_file(const char *path, const struct rt_buf *b)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return false;
	bool ok = rt_write_all(fd, b->data, b->len) == 0;
	return close(fd) == 0 && ok;
}

int main(int argc, char **argv)
{
	for (int i = 0; i < FUNCTIONS; i++)
		snprintf(names[i], sizeof(names[i]), "bench::module%d::function_%d", i % 37, i);

	size_t mapped_before = rt_heap_mapped_bytes();
	struct profile *p = profile_create(NULL);
	uint64_t pcs[DEPTH];
	struct sw_value v[2] = {{SW_V_CPU_SAMPLES, 1}, {SW_V_CPU_TIME, 10000000}};
	char tname[16];
	double t0 = now_s();
	uint64_t adds = 0;
	/* Each stack is added 3 times (1 insert + 2 aggregations). */
	for (int rep = 0; rep < 3; rep++) {
		for (uint64_t i = 0; i < STACKS; i++) {
			/* Shared roots, diverse middles, a distinct leaf per stack. */
			for (uint64_t f = 0; f < DEPTH; f++)
				pcs[f] = 0x10000000 + ((((i >> (f / 6)) * 2654435761u + f * 97) % 60000) << 4);
			pcs[0] = 0x20000000 + (i << 4);
			snprintf(tname, sizeof(tname), "worker-%d", (int)(i % 16));
			struct sw_label l[2] = {{SW_LABEL_THREAD_ID, NULL, (int64_t)(1000 + i % 16), NULL},
						{SW_LABEL_THREAD_NAME, tname, 0, NULL}};
			struct sw_sample s = {pcs, DEPTH, v, 2, l, 2};
			if (profile_add(p, &s) != PROFILE_ADD_OK) {
				fprintf(stderr, "add failed\n");
				return 1;
			}
			adds++;
		}
	}
	double t_add = now_s() - t0;
	size_t mapped_after = rt_heap_mapped_bytes();
	struct profile_stats st;
	profile_get_stats(p, &st);
	profile_set_times(p, st.start_ns, st.start_ns + 60000000000ull);

	struct pprof_opts o;
	pprof_opts_for_kind(&o, SW_KIND_CPU, 10000000);
	struct rt_buf out = {0};
	double best = 1e9, sum = 0;
	for (int r = 0; r < ROUNDS; r++) {
		rt_buf_reset(&out);
		double a = now_s();
		if (pprof_encode(p, sw_kind_value_mask(SW_KIND_CPU), &o, resolve, NULL, &out) != 0) {
			fprintf(stderr, "encode failed\n");
			return 1;
		}
		double d = now_s() - a;
		sum += d;
		if (d < best)
			best = d;
	}
	struct rt_buf gz = {0};
	double g0 = now_s();
	if (gz_compress(out.data, out.len, GZ_LEVEL_DEFAULT, &gz) != 0) {
		fprintf(stderr, "gzip failed\n");
		return 1;
	}
	double t_gz = now_s() - g0;

	printf("BENCH encode: recorder_add = %.0f ns/add (%llu adds, %u distinct stacks of depth %d)\n",
	       t_add / (double)adds * 1e9, (unsigned long long)adds, st.stacks, DEPTH);
	printf("BENCH encode: recorder_memory = %.2f MiB per 10k stacks (heap mapped delta; profile's own count %.2f MiB)\n",
	       (double)(mapped_after - mapped_before) / 1048576.0 * 10000.0 / st.stacks,
	       (double)st.memory_bytes / 1048576.0 * 10000.0 / st.stacks);
	printf("BENCH encode: pprof_encode = %.2f ms (best of %d; mean %.2f ms; 10k stacks x depth %d, %llu frames)\n",
	       best * 1e3, ROUNDS, sum / ROUNDS * 1e3, DEPTH, (unsigned long long)st.frames);
	printf("BENCH encode: pprof_size = %.1f KiB (uncompressed, %.1f bytes per sample)\n",
	       (double)out.len / 1024.0, (double)out.len / st.samples);
	printf("BENCH encode: gzip = %.2f ms (level %d, %.1f KiB, ratio %.2f)\n", t_gz * 1e3, GZ_LEVEL_DEFAULT,
	       (double)gz.len / 1024.0, (double)out.len / (double)gz.len);
	printf("BENCH encode: encode_plus_gzip = %.2f ms (per 10k-stack profile)\n", (best + t_gz) * 1e3);
	if (argc > 1 && !write_file(argv[1], &gz)) {
		perror(argv[1]);
		return 1;
	}
	rt_buf_free(&gz);
	rt_buf_free(&out);
	profile_release(p);
	return 0;
}
