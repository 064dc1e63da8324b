/* Function tables: the sort into table order against qsort (the judge), the
 * work it does counted (not timed) against the table's size, and the
 * registry's name lookups counted: each (module, address) looked up once,
 * the pages lookups read given back every 64 lookups. */
#include <stdlib.h>
#include <string.h>

#include "rt/rt.h"
#include "symbols/functions.h"
#include "symbols/symbols.h"
#include "unit/check.h"

static int entry_cmp(const void *pa, const void *pb)
{
	const struct function_entry *a = pa, *b = pb;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->name < b->name ? -1 : a->name > b->name;
}

static uint64_t rand64(void)
{
	return (uint64_t)rand() << 31 ^ (uint64_t)rand();
}

/* n entries as a linker lays out a library: starts spread over `span`
 * bytes, every 16th with an alias at the same address, every 64th a
 * .dynsym twin of a .symtab entry; listed in a shuffled order. */
static struct function_entry *library_entries(uint32_t n, uint64_t base, uint64_t span)
{
	struct function_entry *f = calloc(n, sizeof(*f));
	for (uint32_t i = 0; i < n; i++) {
		f[i].start = (i % 16 == 1) ? f[i - 1].start : base + rand64() % span;
		f[i].size_bits = 16 + (uint32_t)(rand() % 4096);
		f[i].name = (i % 64 == 2) ? (i | FUNCTION_IN_DYNSYM) : i;
	}
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = (uint32_t)rand() % i;
		struct function_entry t = f[i - 1];
		f[i - 1] = f[j];
		f[j] = t;
	}
	return f;
}

static void sort_matches_qsort(void)
{
	static const uint32_t sizes[] = { 0, 1, 2, 3, 33, 1000, 60000 };
	srand(22);
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s];
		struct function_entry *ours = library_entries(n ? n : 1, 0x400000, 96u << 20);
		struct function_entry *theirs = malloc((n ? n : 1) * sizeof(*theirs));
		memcpy(theirs, ours, (n ? n : 1) * sizeof(*theirs));
		uint64_t steps;
		CHECK(function_entries_sort(ours, n, &steps));
		qsort(theirs, n, sizeof(*theirs), entry_cmp);
		CHECK(n == 0 || memcmp(ours, theirs, n * sizeof(*ours)) == 0);
		free(ours);
		free(theirs);
	}
}

/* Starts that defeat the buckets (all but one in a few bytes, one far away;
 * every entry at one address) still sort right. */
static void sort_clustered_starts(void)
{
	enum { N = 5000 };
	struct function_entry *f = calloc(N, sizeof(*f)), *g = calloc(N, sizeof(*g));
	for (int shape = 0; shape < 2; shape++) {
		for (uint32_t i = 0; i < N; i++) {
			f[i].start = shape == 0 ? 0x1000 + (uint64_t)(rand() % 64) : 0x5000;
			f[i].size_bits = 8;
			f[i].name = (uint32_t)(N - i);
		}
		if (shape == 0)
			f[N / 2].start = UINT64_MAX - 5;
		memcpy(g, f, N * sizeof(*f));
		uint64_t steps;
		CHECK(function_entries_sort(f, N, &steps));
		qsort(g, N, sizeof(*g), entry_cmp);
		CHECK(memcmp(f, g, N * sizeof(*f)) == 0);
	}
	free(f);
	free(g);
}

/* The work of sorting a 60000-function library's table grows with its
 * entries, not with n log n of them: a comparison sort needs over 16 steps an
 * entry (log2 60000), the radix passes a few. */
static void sort_work_is_linear(void)
{
	static const uint32_t sizes[] = { 6000, 60000 };
	uint64_t per_entry[2];
	srand(5);
	for (int k = 0; k < 2; k++) {
		uint32_t n = sizes[k];
		struct function_entry *f = library_entries(n, 0x200000, (uint64_t)n * 1500);
		uint64_t steps;
		CHECK(function_entries_sort(f, n, &steps));
		per_entry[k] = steps / n;
		printf("INFO sort of %u entries: %llu steps (%.2f per entry)\n", n,
		       (unsigned long long)steps, (double)steps / n);
		CHECK(steps <= 4ull * n);
		free(f);
	}
	CHECK(per_entry[1] <= per_entry[0] + 1); /* flat in the table's size */
}

/* Resolving 130 addresses inside one function of this program twice: 130
 * lookups the first time, the second round from the cache (as the profiles
 * of one export share their pcs; a direct-mapped cache may lose a few to
 * collisions), and one release of the pages read per 64 lookups. */
static void registry_looks_each_name_up_once(void)
{
	const uintptr_t base = (uintptr_t)sort_matches_qsort;
	CHECK(symbols_refresh());
	struct symbols_stats before, mid, after;
	symbols_stats(&before);
	uint32_t named = 0;
	for (int round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < 130; i++) {
			struct sw_frame_info fi;
			CHECK(symbols_resolve(NULL, base + i, &fi));
			named += fi.function != NULL && strcmp(fi.function, "sort_matches_qsort") == 0;
		}
		if (round == 0)
			symbols_stats(&mid);
	}
	symbols_stats(&after);
	uint64_t looked = after.names_looked_up - before.names_looked_up;
	uint64_t cached = after.names_from_cache - before.names_from_cache;
	printf("INFO names looked up %llu, from the cache %llu, page releases %llu\n",
	       (unsigned long long)looked, (unsigned long long)cached,
	       (unsigned long long)(after.name_page_releases - before.name_page_releases));
	CHECK_EQ_U64(named, 2 * 130);
	CHECK_EQ_U64(mid.names_looked_up - before.names_looked_up, 130);
	CHECK(cached >= 130 - 16 && looked + cached == 2 * 130);
	CHECK_EQ_U64(after.name_page_releases - before.name_page_releases, looked / 64);
	symbols_collect_garbage();
}

int main(void)
{
	RUN(sort_matches_qsort);
	RUN(sort_clustered_starts);
	RUN(sort_work_is_linear);
	RUN(registry_looks_each_name_up_once);
	return CHECK_DONE();
}
