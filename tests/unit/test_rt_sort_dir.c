/* rt_sort against qsort, and rt_dir against readdir, as independent judges. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt/rt.h"
#include "unit/check.h"

struct rec {
	uint64_t key;
	uint32_t id;
	uint8_t pad[3];
};

static bool rec_before(const void *a, const void *b)
{
	return ((const struct rec *)a)->key < ((const struct rec *)b)->key;
}

static bool u64_before(const void *a, const void *b)
{
	return *(const uint64_t *)a < *(const uint64_t *)b;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void sort_matches_qsort(void)
{
	static const size_t sizes[] = { 0, 1, 2, 3, 7, 64, 1000, 4097 };
	srand(17);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		uint64_t *ours = malloc((n + 1) * sizeof(uint64_t));
		uint64_t *theirs = malloc((n + 1) * sizeof(uint64_t));
		for (size_t i = 0; i < n; i++)
			ours[i] = theirs[i] = (uint64_t)(rand() % 50); /* many ties */
		rt_sort(ours, n, sizeof(ours[0]), u64_before);
		qsort(theirs, n, sizeof(theirs[0]), u64_cmp);
		CHECK(n == 0 || memcmp(ours, theirs, n * sizeof(ours[0])) == 0);
		free(ours);
		free(theirs);
	}
}

static void sort_moves_whole_records(void)
{
	enum { N = 500 };
	struct rec r[N];
	for (uint32_t i = 0; i < N; i++) {
		r[i].key = (uint64_t)((i * 7919u) % N);
		r[i].id = i;
		memset(r[i].pad, (int)(i & 0xff), sizeof(r[i].pad));
	}
	rt_sort(r, N, sizeof(r[0]), rec_before);
	for (uint32_t i = 0; i < N; i++) {
		CHECK_EQ_U64(r[i].key, i);
		CHECK_EQ_U64((r[i].id * 7919u) % N, r[i].key); /* the record travelled whole */
		CHECK_EQ_U64(r[i].pad[2], r[i].id & 0xff);
	}
}

static int count_readdir(const char *path, const char *prefix)
{
	DIR *d = opendir(path);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d)) != NULL;)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d)
		closedir(d);
	return n;
}

static void dir_lists_what_readdir_lists(void)
{
	char path[] = "/tmp/stowaway-dir-XXXXXX";
	CHECK(mkdtemp(path) != NULL);
	/* Enough long names for several getdents reads of 8 KiB. */
	for (int i = 0; i < 600; i++) {
		char f[256];
		snprintf(f, sizeof(f), "%s/entry-%04d-%0100d", path, i, i);
		int fd = open(f, O_CREAT | O_WRONLY, 0600);
		CHECK(fd >= 0);
		close(fd);
	}
	struct rt_dir *d = malloc(sizeof(*d));
	CHECK(rt_dir_open(d, AT_FDCWD, path, 10000) == 0);
	int n = 0, dots = 0;
	for (const char *name; (name = rt_dir_next(d)) != NULL;) {
		n += strncmp(name, "entry-", 6) == 0;
		dots += strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
	}
	CHECK(d->reads > 2);
	rt_dir_close(d);
	CHECK_EQ_U64(n, 600);
	CHECK_EQ_U64(n, count_readdir(path, "entry-"));
	CHECK_EQ_U64(dots, 2);

	/* The read bound ends the listing early. */
	CHECK(rt_dir_open(d, AT_FDCWD, path, 1) == 0);
	n = 0;
	while (rt_dir_next(d) != NULL)
		n++;
	rt_dir_close(d);
	CHECK(n > 0 && n < 600);

	CHECK(rt_dir_open(d, AT_FDCWD, "/nonexistent-stowaway", 10) < 0);
	CHECK(rt_dir_next(d) == NULL);
	rt_dir_close(d);
	free(d);
	for (int i = 0; i < 600; i++) {
		char f[256];
		snprintf(f, sizeof(f), "%s/entry-%04d-%0100d", path, i, i);
		unlink(f);
	}
	rmdir(path);
}

/* Short names make records of the smallest size (24 bytes): the last one in
 * a read must be listed too. */
static void dir_lists_short_names(void)
{
	char path[] = "/tmp/stowaway-dir-XXXXXX";
	CHECK(mkdtemp(path) != NULL);
	for (int i = 0; i < 26; i++) {
		char f[64];
		snprintf(f, sizeof(f), "%s/%c", path, 'a' + i);
		int fd = open(f, O_CREAT | O_WRONLY, 0600);
		CHECK(fd >= 0);
		close(fd);
	}
	struct rt_dir *d = malloc(sizeof(*d));
	CHECK(rt_dir_open(d, AT_FDCWD, path, 10) == 0);
	int n = 0;
	for (const char *name; (name = rt_dir_next(d)) != NULL;)
		n += strlen(name) == 1 && name[0] >= 'a' && name[0] <= 'z';
	rt_dir_close(d);
	free(d);
	CHECK_EQ_U64(n, 26);
	for (int i = 0; i < 26; i++) {
		char f[64];
		snprintf(f, sizeof(f), "%s/%c", path, 'a' + i);
		unlink(f);
	}
	rmdir(path);
}

int main(void)
{
	RUN(sort_matches_qsort);
	RUN(sort_moves_whole_records);
	RUN(dir_lists_what_readdir_lists);
	RUN(dir_lists_short_names);
	return CHECK_DONE();
}
