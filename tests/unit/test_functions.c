/* Function tables: the sort into table order against qsort (the judge), the
 * work it does counted (not timed) against the table's size, and the
 * registry's name lookups counted: each (module, address) looked up once,
 * the pages lookups read given back every 64 lookups.  The scan of a few
 * addresses (function_scan) against the table's lookups on the same
 * symbols. */
#include <linux/elf.h>
#include <stdlib.h>
#include <string.h>

#include "rt/rt.h"
#include "symbols/functions.h"
#include "symbols/symbols.h"
#include "unit/check.h"

/* Not in every linux/elf.h. */
enum { IFUNC_TYPE = 10 /* STT_GNU_IFUNC */, VERSYM_TYPE = 0x6fffffff /* SHT_GNU_VERSYM */ };

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

/* ---- the scan against the table ---- */

/* A relocatable-looking ELF image holding only symbol tables: .symtab with
 * .strtab, and .dynsym with .dynstr and .gnu.version. */
struct test_elf {
	unsigned char *data;
	size_t size;
};

struct test_sym {
	uint64_t value, size;
	uint8_t type, bind;
	uint16_t shndx;
	uint16_t version; /* .dynsym only: bit 15 set = hidden */
	const char *name; /* NULL: st_name 0 */
	int in_dynsym;
};

static size_t put(unsigned char *buf, size_t at, const void *p, size_t n)
{
	memcpy(buf + at, p, n);
	return at + n;
}

static struct test_elf build_elf(const struct test_sym *syms, uint32_t n)
{
	enum { NSECT = 6 };
	size_t cap = 4096 + (size_t)(n + 2) * (sizeof(Elf64_Sym) + 2 + 64);
	unsigned char *buf = calloc(1, cap);
	uint32_t count[2] = {1, 1};
	for (uint32_t i = 0; i < n; i++)
		count[syms[i].in_dynsym != 0]++;
	/* String tables: "" first, then every name; one empty name at a
	 * nonzero offset (the byte before a name's start is its own NUL). */
	size_t at = sizeof(Elf64_Ehdr);
	size_t tab_off[2], str_off[2], str_size[2], ver_off;
	Elf64_Sym zero;
	memset(&zero, 0, sizeof(zero));
	for (int d = 0; d < 2; d++) {
		tab_off[d] = at;
		at += (size_t)count[d] * sizeof(Elf64_Sym);
	}
	ver_off = at;
	at += (size_t)count[1] * 2;
	for (int d = 0; d < 2; d++) {
		str_off[d] = at;
		buf[at++] = 0; /* offset 0: "" */
		uint32_t k = 1;
		put(buf, tab_off[d], &zero, sizeof(zero));
		for (uint32_t i = 0; i < n; i++) {
			if ((syms[i].in_dynsym != 0) != d)
				continue;
			Elf64_Sym es;
			memset(&es, 0, sizeof(es));
			es.st_info = (unsigned char)(syms[i].bind << 4 | syms[i].type);
			es.st_shndx = syms[i].shndx;
			es.st_value = syms[i].value;
			es.st_size = syms[i].size;
			if (syms[i].name != NULL) {
				es.st_name = (uint32_t)(at - str_off[d]);
				size_t len = strlen(syms[i].name);
				memcpy(buf + at, syms[i].name, len + 1);
				at += len + 1;
				if (len == 0)
					es.st_name = (uint32_t)(at - 1 - str_off[d]);
			}
			put(buf, tab_off[d] + (size_t)k * sizeof(es), &es, sizeof(es));
			if (d == 1)
				memcpy(buf + ver_off + (size_t)k * 2, &syms[i].version, 2);
			k++;
		}
		str_size[d] = at - str_off[d];
	}
	at = (at + 7) & ~(size_t)7;
	Elf64_Shdr sh[NSECT];
	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){.sh_type = SHT_SYMTAB, .sh_offset = tab_off[0],
			     .sh_size = count[0] * sizeof(Elf64_Sym), .sh_link = 2,
			     .sh_entsize = sizeof(Elf64_Sym)};
	sh[2] = (Elf64_Shdr){.sh_type = SHT_STRTAB, .sh_offset = str_off[0], .sh_size = str_size[0]};
	sh[3] = (Elf64_Shdr){.sh_type = SHT_DYNSYM, .sh_offset = tab_off[1],
			     .sh_size = count[1] * sizeof(Elf64_Sym), .sh_link = 4,
			     .sh_entsize = sizeof(Elf64_Sym)};
	sh[4] = (Elf64_Shdr){.sh_type = SHT_STRTAB, .sh_offset = str_off[1], .sh_size = str_size[1]};
	sh[5] = (Elf64_Shdr){.sh_type = VERSYM_TYPE, .sh_offset = ver_off,
			     .sh_size = (uint64_t)count[1] * 2, .sh_link = 3};
	size_t shoff = at;
	at = put(buf, at, sh, sizeof(sh));
	Elf64_Ehdr eh;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_shoff = shoff;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = NSECT;
	put(buf, 0, &eh, sizeof(eh));
	return (struct test_elf){buf, at};
}

static const char *const NAMES[] = {
	"f", "g", "_f", "__f", "__GI_f", "__GI_g", "_ZN1AC1Ev", "_ZN1AC2Ev", "h", "strtol", "strtoq",
	"", "__GI_", "a_long_function_name", "b",
};

/* Symbols of a library squeezed into `span` bytes: nested and overlapping
 * ranges, aliases at one start (ranked by binding, version, underscores,
 * length and name, and equal names in both tables), zero sizes, IFUNCs,
 * objects, undefined and unnamed entries. */
static struct test_sym *random_symbols(uint32_t n, uint64_t base, uint64_t span, uint32_t alias_max)
{
	struct test_sym *v = calloc(n, sizeof(*v));
	for (uint32_t i = 0; i < n; i++) {
		struct test_sym *s = &v[i];
		uint32_t r = (uint32_t)rand();
		if (i > 0 && r % 4 == 0 && alias_max > 1) {
			/* An alias of an earlier start (a run of up to alias_max). */
			uint32_t back = 1 + (uint32_t)rand() % RT_MIN(i, alias_max - 1);
			s->value = v[i - back].value;
		} else {
			s->value = base + rand64() % span;
		}
		uint32_t kind = (uint32_t)rand() % 16;
		s->size = kind == 0 ? 0 : kind == 1 ? span / 2 : 1 + (uint64_t)rand() % (span / 8 + 1);
		s->type = kind == 2 ? IFUNC_TYPE : kind == 3 ? STT_OBJECT : STT_FUNC;
		s->bind = (uint8_t)((uint32_t)rand() % 3 == 0 ? STB_LOCAL : rand() % 2 ? STB_GLOBAL : STB_WEAK);
		s->shndx = kind == 4 ? SHN_UNDEF : 1;
		s->in_dynsym = rand() % 2;
		s->version = (uint16_t)(s->in_dynsym && rand() % 5 == 0 ? 0x8002 : 1);
		s->name = kind == 5 ? NULL : NAMES[(uint32_t)rand() % (sizeof(NAMES) / sizeof(NAMES[0]))];
	}
	return v;
}

/* Every address a scan answers is named as the table names it (the same
 * string, or both none), for random sets of addresses below,
 * among and past the symbols; the scan answers all but those among more
 * aliases than it keeps, and nothing it was not asked. */
static void scan_names_like_table(void)
{
	srand(2210);
	uint64_t answered = 0, asked = 0, named = 0, refused = 0;
	for (int round = 0; round < 40; round++) {
		uint32_t nsyms = 1 + (uint32_t)rand() % (round < 20 ? 60 : 3000);
		uint64_t base = 0x10000, span = round % 3 == 0 ? 64 : (uint64_t)nsyms * 40;
		uint32_t alias_max = round % 2 ? 3 : 8;
		struct test_sym *syms = random_symbols(nsyms, base, span, alias_max);
		struct test_elf elf = build_elf(syms, nsyms);
		struct elf_image img;
		CHECK(elf_open(&img, elf.data, elf.size));
		struct function_table t;
		bool have_table = function_table_build(&t, &img, true, false);
		/* Ascending, distinct addresses: below, among and past the symbols. */
		uint32_t nq = 1 + (uint32_t)rand() % 300;
		uint64_t *q = malloc(nq * sizeof(*q));
		uint64_t a = base - 1 - (uint64_t)rand() % 64;
		for (uint32_t i = 0; i < nq; i++) {
			q[i] = a;
			a += 1 + (uint64_t)rand() % (2 * span / nq + 2);
		}
		struct function_scan sc;
		CHECK(function_scan_build(&sc, &img, true, false, q, nq));
		for (uint32_t i = 0; i < nq; i++) {
			const char *want = have_table ? function_table_lookup(&t, q[i]) : NULL;
			const char *got = (const char *)1;
			asked++;
			if (!function_scan_lookup(&sc, q[i], &got)) {
				refused++;
				continue;
			}
			answered++;
			named += got != NULL;
			if (!(got == want || (got != NULL && want != NULL && strcmp(got, want) == 0))) {
				fprintf(stderr, "  round %d addr %#llx: scan %s, table %s\n", round,
					(unsigned long long)q[i], got ? got : "(none)", want ? want : "(none)");
				CHECK(!"scan and table agree");
			}
			/* An address not asked is not answered. */
			if (i + 1 < nq && q[i] + 1 < q[i + 1]) {
				const char *other;
				CHECK(!function_scan_lookup(&sc, q[i] + 1, &other));
			}
		}
		function_scan_free(&sc);
		if (have_table)
			function_table_free(&t);
		free(q);
		free(elf.data);
		free(syms);
	}
	printf("INFO scan: %llu addresses asked, %llu answered (%llu named), %llu left to the table\n",
	       (unsigned long long)asked, (unsigned long long)answered, (unsigned long long)named,
	       (unsigned long long)refused);
	CHECK(named > asked / 4);
	CHECK(refused > 0 && refused < asked / 4);
	/* Addresses not ascending are refused whole. */
	struct test_sym one = {.value = 0x1000, .size = 16, .type = STT_FUNC, .bind = STB_GLOBAL,
			       .shndx = 1, .version = 1, .name = "one"};
	struct test_elf elf = build_elf(&one, 1);
	struct elf_image img;
	CHECK(elf_open(&img, elf.data, elf.size));
	const uint64_t bad[2] = {0x1008, 0x1008};
	struct function_scan sc;
	CHECK(!function_scan_build(&sc, &img, true, false, bad, 2));
	const uint64_t good[2] = {0x1008, 0x1010};
	CHECK(function_scan_build(&sc, &img, true, false, good, 2));
	const char *name;
	CHECK(function_scan_lookup(&sc, 0x1008, &name) && name != NULL && strcmp(name, "one") == 0);
	CHECK(function_scan_lookup(&sc, 0x1010, &name) && name == NULL); /* past its end */
	function_scan_free(&sc);
	free(elf.data);
}

/* The registry names pcs readied by symbols_prepare_names by a scan of this
 * program's symbols (few asked of many), with the names the table gives;
 * a pc not readied is named by the table. */
static void registry_scans_few_pcs(void)
{
	const uintptr_t pcs[4] = {(uintptr_t)sort_clustered_starts + 3, (uintptr_t)sort_work_is_linear + 5,
				  (uintptr_t)scan_names_like_table + 7, (uintptr_t)build_elf + 1};
	static const char *const want[4] = {"sort_clustered_starts", "sort_work_is_linear",
					    "scan_names_like_table", "build_elf"};
	uint64_t sorted[4];
	uint32_t order[4] = {0, 1, 2, 3};
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			if (pcs[order[j]] < pcs[order[i]]) {
				uint32_t t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
	for (int i = 0; i < 4; i++)
		sorted[i] = pcs[order[i]];
	CHECK(symbols_refresh());
	struct symbols_stats before, after;
	symbols_stats(&before);
	symbols_prepare_names(sorted, 4);
	for (int i = 0; i < 4; i++) {
		struct sw_frame_info fi;
		CHECK(symbols_resolve(NULL, pcs[i], &fi));
		CHECK(fi.function != NULL && strcmp(fi.function, want[i]) == 0);
	}
	symbols_stats(&after);
	CHECK_EQ_U64(after.names_from_scans - before.names_from_scans, 4);
	/* Not readied: the table. */
	struct sw_frame_info fi;
	CHECK(symbols_resolve(NULL, (uintptr_t)registry_scans_few_pcs + 2, &fi));
	CHECK(fi.function != NULL && strcmp(fi.function, "registry_scans_few_pcs") == 0);
	struct symbols_stats last;
	symbols_stats(&last);
	CHECK_EQ_U64(last.names_from_scans, after.names_from_scans);
	symbols_collect_garbage();
}

int main(void)
{
	RUN(scan_names_like_table);
	RUN(registry_scans_few_pcs);
	RUN(sort_matches_qsort);
	RUN(sort_clustered_starts);
	RUN(sort_work_is_linear);
	RUN(registry_looks_each_name_up_once);
	return CHECK_DONE();
}
