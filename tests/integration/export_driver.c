/* Drives one network exporter the way the scheduler does, for the
 * integration tests: configuration from the environment (config_load),
 * one batch built from a file, one export_batch call with a deadline.
 *
 * usage: export_driver datadog|pyroscope PROFILE_FILE [DEADLINE_MS [RUNS]]
 * Prints one line per run:
 *   export rc=<rc> elapsed_ms=<ms> tls_heap_peak=<bytes> tls_heap_now=<bytes>
 * Exit status: 0 all runs succeeded, 1 a run failed, 2 no exporter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "export/export.h"
#include "export/tls.h"
#include "rt/rt.h"

static unsigned char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (n < cap)
			break;
		unsigned char *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	fclose(f);
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s datadog|pyroscope PROFILE [DEADLINE_MS [RUNS]]\n", argv[0]);
		return 2;
	}
	static struct sw_config cfg;
	config_load(&cfg, "export-driver");
	long deadline_ms = argc > 3 ? atol(argv[3]) : 10000;
	int runs = argc > 4 ? atoi(argv[4]) : 1;

	struct sw_exporter *ex = NULL;
	if (strcmp(argv[1], "datadog") == 0)
		ex = export_datadog_create(&cfg);
	else if (strcmp(argv[1], "pyroscope") == 0)
		ex = export_pyroscope_create(&cfg);
	if (!ex) {
		printf("export no-exporter\n");
		return 2;
	}
	size_t len = 0;
	unsigned char *profile = read_whole(argv[2], &len);
	if (!profile) {
		fprintf(stderr, "cannot read %s\n", argv[2]);
		return 2;
	}
	struct sw_export_item items[SW_KIND_COUNT];
	size_t n_items = 0;
	for (unsigned k = 0; k < SW_KIND_COUNT; k++) {
		if (cfg.kinds & SW_KIND_BIT(k)) {
			items[n_items].kind = (enum sw_kind)k;
			items[n_items].gz = profile;
			items[n_items].len = len;
			n_items++;
		}
	}
	/* Pyroscope takes one profile per kind as the encoder names it; the
	 * file stands for each. */
	struct sw_export_pyro_item pyro[SW_KIND_COUNT];
	for (size_t i = 0; i < n_items; i++)
		pyro[i] = (struct sw_export_pyro_item){items[i].kind, sw_kind_name(items[i].kind), NULL,
						       profile, len};
	static const struct sw_endpoint_count counts[1] = {{"GET /driver", 7}};
	const char *runtime_id = getenv("EXPORT_DRIVER_RUNTIME_ID");
	uint64_t now = rt_realtime_ns();
	struct sw_export_batch batch = {
		.start_ns = now - 60ull * 1000000000ull,
		.end_ns = now,
		.seq = 0,
		.pid = (uint32_t)getpid(),
		.runtime_id = runtime_id ? runtime_id : "00000000-0000-4000-8000-000000000000",
		.items = items,
		.n_items = n_items,
		.combined_gz = profile,
		.combined_len = len,
		.final = false,
		.pyro_items = pyro,
		.n_pyro_items = n_items,
		.endpoint_counts = counts,
		.n_endpoint_counts = 1,
	};
	int failures = 0;
	for (int run = 0; run < runs; run++) {
		export_tls_heap_reset_peak();
		size_t heap_before = export_tls_heap_current();
		uint64_t t0 = rt_monotonic_ns();
		int rc = ex->export_batch(ex, &batch, t0 + (uint64_t)deadline_ms * 1000000ull);
		uint64_t t1 = rt_monotonic_ns();
		printf("export rc=%d elapsed_ms=%llu tls_heap_peak=%zu tls_heap_now=%zu\n", rc,
		       (unsigned long long)((t1 - t0) / 1000000u), export_tls_heap_peak() - heap_before,
		       export_tls_heap_current());
		fflush(stdout);
		if (rc != 0)
			failures++;
		batch.seq++;
	}
	ex->destroy(ex);
	free(profile);
	return failures ? 1 : 0;
}
