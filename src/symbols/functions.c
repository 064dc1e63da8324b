/* Function symbol tables and the naming rules (see functions.h). */
#include "symbols/functions.h"

#include <linux/elf.h>

#include "rt/rt.h"
#include "rt/search.h"
#include "rt/sys.h"

const char *function_display_name(const char *name)
{
	if (name != NULL && name[0] == '_' && rt_starts_with(name, "__GI_") && name[5] != 0)
		return name + 5;
	return name;
}

uint32_t function_alias_preference(const struct elf_symbol *sym, const char *name)
{
	uint32_t bind = sym->bind == STB_GLOBAL ? 2u : sym->bind == STB_WEAK ? 1u : 0u;
	uint32_t underscores = 0;
	while (underscores < 15 && name[underscores] == '_')
		underscores++;
	size_t len = rt_strnlen(name, 255);
	uint32_t shortness = (uint32_t)(255 - len);
	return bind << 24 | (sym->hidden_version ? 0u : 1u) << 23 | (15u - underscores) << 8 | shortness;
}

/* Table order: by start, then by where the name is (.symtab's before
 * .dynsym's, each by offset), so the order does not depend on the sort. */
static bool entry_before(const struct function_entry *a, const struct function_entry *b)
{
	return a->start < b->start || (a->start == b->start && a->name < b->name);
}

static bool entry_before_any(const void *a, const void *b)
{
	return entry_before(a, b);
}

/* Radix digits of at most this many bits (32 KiB of counts): two passes
 * for a library of up to 64 MiB of code. */
#define SORT_DIGIT_BITS_MAX 13u
/* A run of entries at one address longer than this is heap-sorted by name,
 * not insertion-sorted. */
#define SORT_INSERTION_MAX 32u

/* Orders each run of entries at one start by name: insertion for short runs
 * (aliases: a few names of one function), the heap sort for long ones. */
static void sort_alias_runs(struct function_entry *f, uint32_t n, uint64_t *steps)
{
	for (uint32_t lo = 0, hi; lo + 1 < n; lo = hi) {
		if (f[lo + 1].start != f[lo].start) {
			hi = lo + 1; /* most addresses have one symbol */
			continue;
		}
		hi = lo + 2;
		while (hi < n && f[hi].start == f[lo].start)
			hi++;
		uint32_t k = hi - lo;
		if (k > SORT_INSERTION_MAX) {
			rt_sort(f + lo, k, sizeof(f[0]), entry_before_any);
			uint32_t log2k = 0;
			while (log2k < 32 && (k >> log2k) > 1)
				log2k++;
			*steps += 2 * (uint64_t)k * (log2k + 1); /* the heap sort's bound */
			continue;
		}
		for (uint32_t i = lo + 1; i < hi; i++) {
			struct function_entry x = f[i];
			uint32_t j = i;
			while (j > lo && entry_before(&x, &f[j - 1])) {
				f[j] = f[j - 1];
				j--;
				++*steps;
			}
			f[j] = x;
			++*steps;
		}
	}
}

/* A least-significant-digit radix sort on start - min (stable passes of a
 * counting scatter between f and a copy, a few digits for a library's
 * span), then each run of one address by name.  No comparison and no
 * data-dependent branch per entry: the in-place distribution and the
 * insertion it needed mispredicted a branch at most moves (about 0.8 ms
 * for libLLVM's 35000 functions, now about a quarter of that). */
bool function_entries_sort(struct function_entry *f, uint32_t n, uint64_t *steps)
{
	*steps = 0;
	if (n < 2)
		return true;
	uint64_t min = UINT64_MAX, max = 0;
	for (uint32_t i = 0; i < n; i++) {
		min = RT_MIN(min, f[i].start);
		max = RT_MAX(max, f[i].start);
	}
	uint32_t bits = 0;
	while (bits < 64 && ((max - min) >> bits) != 0)
		bits++;
	uint32_t passes = (bits + SORT_DIGIT_BITS_MAX - 1) / SORT_DIGIT_BITS_MAX;
	if (passes > 0) {
		uint32_t digit = RT_MIN((bits + passes - 1) / passes, SORT_DIGIT_BITS_MAX);
		/* Whole pages, not a heap block: an export's heap keep scope
		 * (rt_heap_keep_begin) would hold them to its end, and no later
		 * block of the export is about their size. */
		size_t copy_bytes = (size_t)n * sizeof(struct function_entry);
		struct function_entry *copy = rt_pages_alloc(copy_bytes);
		uint32_t *count = rt_malloc(((size_t)1 << digit) * sizeof(uint32_t));
		if (copy == NULL || count == NULL) {
			rt_pages_free(copy, copy_bytes);
			rt_free(count);
			return false;
		}
		struct function_entry *from = f, *to = copy;
		uint64_t mask = ((uint64_t)1 << digit) - 1;
		for (uint32_t p = 0; p < passes; p++) {
			uint32_t shift = p * digit;
			rt_memset(count, 0, ((size_t)1 << digit) * sizeof(uint32_t));
			for (uint32_t i = 0; i < n; i++)
				count[((from[i].start - min) >> shift) & mask]++;
			uint32_t sum = 0;
			for (uint64_t d = 0; d <= mask; d++) {
				uint32_t c = count[d];
				count[d] = sum;
				sum += c;
			}
			for (uint32_t i = 0; i < n; i++)
				to[count[((from[i].start - min) >> shift) & mask]++] = from[i];
			*steps += n;
			struct function_entry *t = from;
			from = to;
			to = t;
		}
		if (from != f)
			rt_memcpy(f, from, (size_t)n * sizeof(*f));
		rt_free(count);
		rt_pages_free(copy, copy_bytes);
	}
	sort_alias_runs(f, n, steps);
	return true;
}

/* Symbol table bytes read between two page releases. */
#define RELEASE_EVERY ((uint64_t)256 << 10)

/* Gives back the pages of img's [from, to) (a read-only private mapping). */
static void release_pages(const struct elf_image *img, uint64_t from, uint64_t to)
{
	from = (from + 4095) & ~(uint64_t)4095;
	to = RT_MIN(to, (uint64_t)img->size) & ~(uint64_t)4095;
	if (to > from)
		(void)sys_madvise((void *)(uintptr_t)(img->data + from), (size_t)(to - from),
				  4 /* MADV_DONTNEED */);
}

/* Reads the sized function symbols of one table in order, giving back the
 * pages read every RELEASE_EVERY bytes when release is set. */
struct entry_reader {
	struct elf_symbol_iter *it;
	uint32_t flag; /* FUNCTION_IN_DYNSYM for .dynsym's entries */
	bool release;
	uint64_t released; /* table bytes up to here are given back */
};

static void entry_reader_begin(struct entry_reader *r, struct elf_symbol_iter *it, uint32_t flag,
			       bool release)
{
	*r = (struct entry_reader){.it = it, .flag = flag, .release = release,
				   .released = it->symtab.offset};
	it->next = 1;
}

/* The next entry into *out; false at the end (the rest given back). */
static inline bool entry_reader_next(struct entry_reader *r, struct function_entry *out)
{
	struct elf_symbol_iter *it = r->it;
	struct elf_symbol sym;
	if (it->img == NULL)
		return false; /* no such table */
	while (elf_symbols_next(it, &sym)) {
		uint64_t at = it->symtab.offset + it->next * sizeof(Elf64_Sym);
		if (r->release && at - r->released >= RELEASE_EVERY) {
			release_pages(it->img, r->released, at);
			r->released = at;
		}
		if (sym.size == 0 || sym.name_offset >= FUNCTION_IN_DYNSYM)
			continue; /* covers nothing we could claim */
		out->start = sym.value;
		out->size_bits = (sym.size > FUNCTION_SIZE_MAX ? FUNCTION_SIZE_MAX : (uint32_t)sym.size) |
				 (sym.hidden_version ? FUNCTION_HIDDEN_VERSION : 0u) |
				 (uint32_t)(sym.bind & 3u) << FUNCTION_BIND_SHIFT;
		out->name = sym.name_offset | r->flag;
		return true;
	}
	return false;
}

/* Gives back the rest of the table's pages read. */
static void entry_reader_end(struct entry_reader *r)
{
	struct elf_symbol_iter *it = r->it;
	if (r->release && it->img != NULL)
		release_pages(it->img, r->released, it->symtab.offset + it->symtab.size + 4095);
}

/* Writes the sized function symbols of one table (at most cap) to out. */
static uint32_t collect(struct elf_symbol_iter *it, uint32_t flag, struct function_entry *out,
			uint32_t cap, bool release)
{
	struct entry_reader r;
	uint32_t n = 0;
	entry_reader_begin(&r, it, flag, release);
	while (n < cap && entry_reader_next(&r, &out[n]))
		n++;
	entry_reader_end(&r);
	return n;
}

/* Opens img's symbol tables for reading without names (count 0: none). */
static void open_tables(const struct elf_image *img, bool with_dynsym, struct elf_symbol_iter *symtab,
			struct elf_symbol_iter *dynsym)
{
	if (elf_symbols_begin(img, SHT_SYMTAB, symtab))
		symtab->without_names = true;
	else
		rt_memset(symtab, 0, sizeof(*symtab));
	if (with_dynsym && elf_symbols_begin(img, SHT_DYNSYM, dynsym))
		dynsym->without_names = true;
	else
		rt_memset(dynsym, 0, sizeof(*dynsym));
}

bool function_table_build(struct function_table *t, const struct elf_image *img, bool with_dynsym,
			  bool release_pages)
{
	rt_memset(t, 0, sizeof(*t));
	t->img = *img;
	open_tables(&t->img, with_dynsym, &t->symtab, &t->dynsym);
	/* One pass into room for every symbol: a large table is its own
	 * anonymous mapping, of which only the pages written take memory, so
	 * the symbol tables are read once (a counting pass read them twice). */
	const uint64_t cap = UINT32_MAX / 2;
	uint64_t room = t->symtab.count + t->dynsym.count;
	if (room == 0 || room > cap)
		return false;
	t->funcs = rt_malloc((size_t)room * sizeof(t->funcs[0]));
	if (t->funcs == NULL)
		return false;
	uint32_t ns = collect(&t->symtab, 0, t->funcs, (uint32_t)t->symtab.count, release_pages);
	uint32_t nd = collect(&t->dynsym, FUNCTION_IN_DYNSYM, t->funcs + ns,
			      (uint32_t)(room - ns), release_pages);
	if (ns + nd == 0) {
		function_table_free(t);
		return false;
	}
	t->nfuncs = ns + nd;
	if (!function_entries_sort(t->funcs, t->nfuncs, &t->sort_steps))
		rt_sort(t->funcs, t->nfuncs, sizeof(t->funcs[0]), entry_before_any);
	t->bytes = (size_t)t->nfuncs * sizeof(t->funcs[0]); /* the part written */
	return true;
}

/* Aliases of one address beyond this many are not compared. */
#define ALIASES_MAX 64u

/* The preferred named alias among the entries f[0..n) of one address, in
 * table order, whose names are in img's symtab or dynsym string table: its
 * name, and its entry in *best. */
static const char *preferred_alias(const struct elf_image *img, const struct elf_symbol_iter *symtab,
				   const struct elf_symbol_iter *dynsym, const struct function_entry *f,
				   uint32_t n, const struct function_entry **best)
{
	const char *name = NULL;
	uint32_t pref = 0;
	*best = NULL;
	for (uint32_t i = 0; i < n; i++) {
		const struct elf_symbol_iter *it = (f[i].name & FUNCTION_IN_DYNSYM) ? dynsym : symtab;
		uint32_t off = f[i].name & ~FUNCTION_IN_DYNSYM;
		const char *raw = off != 0 ? elf_string_at(img, &it->strtab, off) : NULL;
		if (raw == NULL || raw[0] == 0)
			continue;
		struct elf_symbol sym = {.bind = (uint8_t)(f[i].size_bits >> FUNCTION_BIND_SHIFT),
					 .hidden_version = (f[i].size_bits & FUNCTION_HIDDEN_VERSION) != 0};
		const char *shown = function_display_name(raw);
		uint32_t p = function_alias_preference(&sym, shown);
		/* Equal ranks (C1/C2 constructors, strtol/strtoq): the name that
		 * sorts first, whatever order the symbol tables list them in. */
		if (name == NULL || p > pref || (p == pref && rt_strcmp(shown, name) < 0)) {
			name = shown;
			pref = p;
			*best = &f[i];
		}
	}
	return name;
}

const char *function_table_lookup(const struct function_table *t, uint64_t addr)
{
	uint32_t lo = rt_upper_bound(t->funcs, t->nfuncs, sizeof(t->funcs[0]),
				     offsetof(struct function_entry, start), addr);
	/* A few addresses back in case a small symbol sits inside a larger one. */
	uint32_t end = lo;
	for (uint32_t k = 0; end > 0 && k < 4; k++) {
		uint64_t start = t->funcs[end - 1].start;
		uint32_t first = end - 1;
		while (first > 0 && t->funcs[first - 1].start == start && end - first < ALIASES_MAX)
			first--;
		const struct function_entry *best;
		const char *name = preferred_alias(&t->img, &t->symtab, &t->dynsym, t->funcs + first,
						   end - first, &best);
		if (name != NULL && addr - best->start < function_size(best))
			return name;
		while (first > 0 && t->funcs[first - 1].start == start)
			first--;
		end = first;
	}
	return NULL;
}

static void release_section(const struct elf_image *img, const struct elf_section *s)
{
	if (s->size > 0)
		release_pages(img, s->offset & ~(uint64_t)4095, s->offset + s->size + 4095);
}

/* Gives back the pages of the string tables of symtab and dynsym. */
static void release_string_tables(const struct elf_image *img, const struct elf_symbol_iter *symtab,
				  const struct elf_symbol_iter *dynsym)
{
	if (symtab->img != NULL)
		release_section(img, &symtab->strtab);
	if (dynsym->img != NULL)
		release_section(img, &dynsym->strtab);
}

void function_table_release_pages(const struct function_table *t)
{
	/* Only the string tables: lookups read nothing else, and the build
	 * gave back the symbol and version tables' pages as it read them. */
	release_string_tables(&t->img, &t->symtab, &t->dynsym);
}

void function_table_free(struct function_table *t)
{
	rt_free(t->funcs);
	rt_memset(t, 0, sizeof(*t));
}

uint64_t function_symbols_in(const struct elf_image *img, bool with_dynsym)
{
	struct elf_symbol_iter symtab, dynsym;
	open_tables(img, with_dynsym, &symtab, &dynsym);
	return symtab.count + dynsym.count;
}

/* Adds entry e to the starts kept for its address range: the
 * FUNCTION_SCAN_STARTS greatest starts, descending, each with its first
 * FUNCTION_SCAN_ALIASES entries in table order. */
static inline void scan_keep(struct function_scan_start *k, const struct function_entry *e)
{
	const uint32_t last = FUNCTION_SCAN_STARTS - 1;
	if (k[last].nalias > 0 && k[last].start > e->start)
		return; /* four greater starts: never compared (most entries) */
	uint32_t i = 0;
	while (k[i].nalias > 0 && k[i].start > e->start)
		i++; /* stops by the test above */
	struct function_scan_start *at = &k[i];
	if (at->nalias > 0 && at->start == e->start) {
		/* Another alias: insert in table order (by name), keep the first. */
		uint32_t kept = RT_MIN(at->nalias, FUNCTION_SCAN_ALIASES);
		uint32_t j = kept;
		while (j > 0 && e->name < at->name[j - 1])
			j--;
		if (j < FUNCTION_SCAN_ALIASES) {
			for (uint32_t m = RT_MIN(kept, FUNCTION_SCAN_ALIASES - 1); m > j; m--) {
				at->name[m] = at->name[m - 1];
				at->size_bits[m] = at->size_bits[m - 1];
			}
			at->name[j] = e->name;
			at->size_bits[j] = e->size_bits;
		}
		if (at->nalias < UINT32_MAX)
			at->nalias++;
		return;
	}
	/* A new start: the smallest kept one (if four) falls out. */
	for (uint32_t m = last; m > i; m--)
		k[m] = k[m - 1];
	at->start = e->start;
	at->nalias = 1;
	at->name[0] = e->name;
	at->size_bits[0] = e->size_bits;
}

/* Index bits per address asked: the index finds the first address at or
 * above a start in a step or two, not a binary search's dozen. */
#define SCAN_INDEX_PER_ADDR 2u

bool function_scan_build(struct function_scan *s, const struct elf_image *img, bool with_dynsym,
			 bool release_pages, const uint64_t *addrs, uint32_t n)
{
	rt_memset(s, 0, sizeof(*s));
	if (n == 0 || n > (1u << 24))
		return false;
	for (uint32_t i = 1; i < n; i++)
		if (addrs[i] <= addrs[i - 1])
			return false;
	s->img = *img;
	open_tables(&s->img, with_dynsym, &s->symtab, &s->dynsym);
	/* index[b]: the first address at or above lo + (b << shift). */
	uint64_t lo = addrs[0], hi = addrs[n - 1];
	uint32_t index_bits = 1;
	while (index_bits < 26 && (1u << index_bits) < n * SCAN_INDEX_PER_ADDR)
		index_bits++;
	uint32_t shift = 0;
	while (shift < 64 && ((hi - lo) >> shift) >= (1ull << index_bits))
		shift++;
	size_t nindex = (size_t)((hi - lo) >> shift) + 1;
	size_t addr_bytes = (size_t)n * sizeof(uint64_t);
	size_t start_bytes = (size_t)n * FUNCTION_SCAN_STARTS * sizeof(struct function_scan_start);
	uint32_t *index = rt_malloc(nindex * sizeof(uint32_t));
	s->addrs = rt_malloc(addr_bytes);
	s->starts = rt_calloc((size_t)n * FUNCTION_SCAN_STARTS, sizeof(struct function_scan_start));
	if (index == NULL || s->addrs == NULL || s->starts == NULL) {
		rt_free(index);
		function_scan_free(s);
		return false;
	}
	rt_memcpy(s->addrs, addrs, addr_bytes);
	s->n = n;
	s->bytes = addr_bytes + start_bytes;
	for (size_t b = 0, i = 0; b < nindex; b++) {
		uint64_t from = lo + ((uint64_t)b << shift);
		while (i < n && addrs[i] < from)
			i++;
		index[b] = (uint32_t)i;
	}
	/* Each entry goes to the first address at or above its start: the
	 * range (addrs[i-1], addrs[i]] it lies in.  An address's nearest
	 * starts are then its own range's, then the ranges below, in turn
	 * (function_scan_lookup). */
	struct elf_symbol_iter *its[2] = {&s->symtab, &s->dynsym};
	const uint32_t flags[2] = {0, FUNCTION_IN_DYNSYM};
	for (int t = 0; t < 2; t++) {
		struct entry_reader r;
		struct function_entry e;
		entry_reader_begin(&r, its[t], flags[t], release_pages);
		while (entry_reader_next(&r, &e)) {
			if (e.start > hi)
				continue; /* above every address: never looked back to */
			uint32_t i = e.start <= lo ? 0 : index[(e.start - lo) >> shift];
			while (s->addrs[i] < e.start)
				i++; /* ends at addrs[n - 1] >= e.start */
			scan_keep(&s->starts[(size_t)i * FUNCTION_SCAN_STARTS], &e);
		}
		entry_reader_end(&r);
	}
	rt_free(index);
	return true;
}

bool function_scan_lookup(const struct function_scan *s, uint64_t addr, const char **name)
{
	uint32_t i = rt_upper_bound(s->addrs, s->n, sizeof(s->addrs[0]), 0, addr);
	*name = NULL;
	if (i == 0 || s->addrs[i - 1] != addr)
		return false;
	/* The nearest starts at or below addr, as the table lookup walks them:
	 * its own range's, then each range below. */
	uint32_t looked = 0;
	for (uint32_t r = i; r > 0 && looked < FUNCTION_SCAN_STARTS; r--) {
		const struct function_scan_start *k = &s->starts[(size_t)(r - 1) * FUNCTION_SCAN_STARTS];
		for (uint32_t j = 0; j < FUNCTION_SCAN_STARTS && k[j].nalias > 0 &&
				     looked < FUNCTION_SCAN_STARTS;
		     j++, looked++) {
			if (k[j].nalias > FUNCTION_SCAN_ALIASES)
				return false; /* entries not kept: the table knows */
			struct function_entry f[FUNCTION_SCAN_ALIASES];
			for (uint32_t a = 0; a < k[j].nalias; a++)
				f[a] = (struct function_entry){.start = k[j].start,
							       .size_bits = k[j].size_bits[a],
							       .name = k[j].name[a]};
			const struct function_entry *best;
			const char *n = preferred_alias(&s->img, &s->symtab, &s->dynsym, f, k[j].nalias,
							&best);
			if (n != NULL && addr - best->start < function_size(best)) {
				*name = n;
				return true;
			}
		}
	}
	return true;
}

void function_scan_release_pages(const struct function_scan *s)
{
	release_string_tables(&s->img, &s->symtab, &s->dynsym);
}

void function_scan_free(struct function_scan *s)
{
	rt_free(s->addrs);
	rt_free(s->starts);
	rt_memset(s, 0, sizeof(*s));
}
