/* The file exporter (export/file.c): names, contents, replacing a name that
 * exists, retention, no temporary file left behind, an unusable directory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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

static int count_profiles(const char *where)
{
	int profiles = 0;
	DIR *d = opendir(where);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;)
		profiles += strstr(e->d_name, ".pb.gz") != NULL;
	if (d)
		closedir(d);
	return profiles;
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
		CHECK_EQ_U64(count_profiles(sub), expect[i]);
	}
	x->destroy(x);
}

/* Profile files written by someone else (another process tree), older than
 * ours. */
static void add_foreign_files(const char *where, const char *who, int n)
{
	for (int i = 0; i < n; i++) {
		char path[400];
		snprintf(path, sizeof(path), "%s/%s.%d.cpu.00000.00000000.pb.gz", where, who, i);
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
		struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
		(void)utimensat(AT_FDCWD, path, old, 0);
	}
}

/* The directory is counted only once the files written since the last
 * count could have reached the bound (a sixteenth of it at most), and a
 * fork child shares that room with its parent: a child of a server forking
 * a process per connection writes its file without reading the directory.
 * Foreign files added behind the writers' backs show when they count. */
static void test_retention_room_shared_with_children(void)
{
	char sub[300];
	snprintf(sub, sizeof(sub), "%s/room", dir);
	struct sw_exporter *x = make(32, sub); /* room of 32/16 = 2 files */
	CHECK(x != NULL);
	if (!x)
		return;
	CHECK(export_two(x, 1, "c", "w") == 0); /* counts: 2 files, room 2 */
	add_foreign_files(sub, "other", 40);
	pid_t pid = fork();
	if (pid == 0) {
		struct sw_exporter *y = make(32, sub);
		int ok = y && export_two(y, 2, "c", "w") == 0; /* within the room: no count */
		_exit(ok ? 0 : 1);
	}
	int status = -1;
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	CHECK_EQ_U64(count_profiles(sub), 44);
	/* The room is used up: the parent's next write counts and trims to
	 * the bound minus a sixteenth, the foreign (oldest) files first. */
	CHECK(export_two(x, 3, "c", "w") == 0);
	CHECK_EQ_U64(count_profiles(sub), 30);
	/* Room 2 again: one batch without a count, then one with. */
	add_foreign_files(sub, "more", 5);
	CHECK(export_two(x, 4, "c", "w") == 0);
	CHECK_EQ_U64(count_profiles(sub), 37);
	CHECK(export_two(x, 5, "c", "w") == 0);
	CHECK_EQ_U64(count_profiles(sub), 30);
	x->destroy(x);
	/* Another bound for the same directory starts from a count. */
	struct sw_exporter *z = make(20, sub);
	CHECK(z != NULL);
	if (!z)
		return;
	CHECK(export_two(z, 6, "c", "w") == 0);
	CHECK_EQ_U64(count_profiles(sub), 19);
	z->destroy(z);
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
	RUN(test_retention_room_shared_with_children);
	RUN(test_unusable_directory);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return CHECK_DONE();
}
