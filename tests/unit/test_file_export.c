/* The file exporter (export/file.c): names, contents, replacing a name that
 * exists, retention, no temporary file left behind, an unusable directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "config/config.h"
#include "export/export.h"

static char dir[256];

/* Counts the directory's entries: profile files and names starting with '.'. */
static void count_entries(int *profiles, int *hidden)
{
	*profiles = *hidden = 0;
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_name[0] == '.')
			(*hidden)++;
		else if (strstr(e->d_name, ".pb.gz"))
			(*profiles)++;
	}
	closedir(d);
}

/* The file's whole content equals data. */
static int file_holds(const char *name, const char *data)
{
	char path[512], buf[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return n == strlen(data) && memcmp(buf, data, n) == 0;
}

static int export_two(struct sw_exporter *x, uint32_t seq, const char *cpu, const char *wall)
{
	struct sw_export_item items[2] = {
		{ .kind = SW_KIND_CPU, .gz = (const uint8_t *)cpu, .len = strlen(cpu) },
		{ .kind = SW_KIND_WALL, .gz = (const uint8_t *)wall, .len = strlen(wall) },
	};
	struct sw_export_batch b = { .seq = seq, .pid = 4242, .runtime_id = "0123abcd-rest",
				     .items = items, .n_items = 2 };
	return x->export_batch(x, &b, 0);
}

static struct sw_exporter *make(uint32_t max_files, const char *where)
{
	static struct sw_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.output_dir, sizeof(cfg.output_dir), "%s", where);
	snprintf(cfg.service, sizeof(cfg.service), "my svc/1");
	cfg.max_files = max_files;
	return export_file_create(&cfg);
}

static void test_write_and_replace(void)
{
	struct sw_exporter *x = make(0, dir);
	CHECK(x != NULL);
	if (!x)
		return;
	CHECK(export_two(x, 7, "cpu-bytes", "wall-bytes") == 0);
	CHECK(file_holds("my_svc_1.4242.cpu.00007.0123abcd.pb.gz", "cpu-bytes"));
	CHECK(file_holds("my_svc_1.4242.wall.00007.0123abcd.pb.gz", "wall-bytes"));
	/* The same names again: the new contents replace the old. */
	CHECK(export_two(x, 7, "cpu-2", "wall-2") == 0);
	CHECK(file_holds("my_svc_1.4242.cpu.00007.0123abcd.pb.gz", "cpu-2"));
	CHECK(file_holds("my_svc_1.4242.wall.00007.0123abcd.pb.gz", "wall-2"));
	int profiles, hidden;
	count_entries(&profiles, &hidden);
	CHECK_EQ_U64(profiles, 2);
	CHECK_EQ_U64(hidden, 0);
	x->destroy(x);
}

static void test_retention(void)
{
	struct sw_exporter *x = make(5, dir);
	CHECK(x != NULL);
	if (!x)
		return;
	for (uint32_t seq = 10; seq < 16; seq++)
		CHECK(export_two(x, seq, "c", "w") == 0);
	int profiles, hidden;
	count_entries(&profiles, &hidden);
	CHECK_EQ_U64(profiles, 5);
	CHECK_EQ_U64(hidden, 0);
	/* The newest period survives. */
	CHECK(file_holds("my_svc_1.4242.cpu.00015.0123abcd.pb.gz", "c"));
	x->destroy(x);
}

/* A directory over a bound of 32 loses the excess plus 32/16 more, so the
 * next writes find it under the bound (no sort by time at every write).
 * Which files go is not checked: a coarse file-system clock gives quick
 * writes the same time. */
static void test_retention_margin(void)
{
	char sub[300];
	snprintf(sub, sizeof(sub), "%s/margin", dir);
	struct sw_exporter *x = make(32, sub);
	CHECK(x != NULL);
	if (!x)
		return;
	int expect[] = { 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 30, 32, 30 };
	for (uint32_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		CHECK(export_two(x, 100 + i, "c", "w") == 0);
		int profiles = 0;
		DIR *d = opendir(sub);
		for (struct dirent *e; d && (e = readdir(d)) != NULL;)
			profiles += strstr(e->d_name, ".pb.gz") != NULL;
		if (d)
			closedir(d);
		CHECK_EQ_U64(profiles, expect[i]);
	}
	x->destroy(x);
}

static void test_unusable_directory(void)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/my_svc_1.4242.cpu.00015.0123abcd.pb.gz/sub", dir);
	struct sw_exporter *x = make(0, path); /* a directory below a file */
	if (!x)
		return; /* refusing at creation is a safe answer too */
	CHECK(export_two(x, 1, "c", "w") < 0);
	x->destroy(x);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "%s/stowaway-file-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_write_and_replace);
	RUN(test_retention);
	RUN(test_retention_margin);
	RUN(test_unusable_directory);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return CHECK_DONE();
}
