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

/* Writes the sized function symbols of one table (at most cap) to out. */
static uint32_t collect(struct elf_symbol_iter *it, uint32_t flag, struct function_entry *out,
			uint32_t cap, bool release)
{
	struct elf_symbol sym;
	uint32_t n = 0;
	uint64_t released = it->symtab.offset;
	if (it->img == NULL)
		return 0; /* no such table */
	it->next = 1;
	while (n < cap && elf_symbols_next(it, &sym)) {
		uint64_t at = it->symtab.offset + it->next * sizeof(Elf64_Sym);
		if (release && at - released >= RELEASE_EVERY) {
			release_pages(it->img, released, at);
			released = at;
		}
		if (sym.size == 0 || sym.name_offset >= FUNCTION_IN_DYNSYM)
			continue; /* covers nothing we could claim */
		out[n].start = sym.value;
		out[n].size_bits = (sym.size > FUNCTION_SIZE_MAX ? FUNCTION_SIZE_MAX : (uint32_t)sym.size) |
				   (sym.hidden_version ? FUNCTION_HIDDEN_VERSION : 0u) |
				   (uint32_t)(sym.bind & 3u) << FUNCTION_BIND_SHIFT;
		out[n].name = sym.name_offset | flag;
		n++;
	}
	if (release && it->img != NULL)
		release_pages(it->img, released, it->symtab.offset + it->symtab.size + 4095);
	return n;
}

bool function_table_build(struct function_table *t, const struct elf_image *img, bool with_dynsym,
			  bool release_pages)
{
	rt_memset(t, 0, sizeof(*t));
	t->img = *img;
	if (elf_symbols_begin(&t->img, SHT_SYMTAB, &t->symtab))
		t->symtab.without_names = true;
	else
		rt_memset(&t->symtab, 0, sizeof(t->symtab));
	if (with_dynsym && elf_symbols_begin(&t->img, SHT_DYNSYM, &t->dynsym))
		t->dynsym.without_names = true;
	else
		rt_memset(&t->dynsym, 0, sizeof(t->dynsym));
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

/* The preferred named alias among the entries [first, end) of one address:
 * its name, and its entry in *best. */
static const char *preferred_alias(const struct function_table *t, uint32_t first, uint32_t end,
				   const struct function_entry **best)
{
	const char *name = NULL;
	uint32_t pref = 0;
	*best = NULL;
	for (uint32_t i = first; i < end; i++) {
		const struct function_entry *f = &t->funcs[i];
		const struct elf_symbol_iter *it = (f->name & FUNCTION_IN_DYNSYM) ? &t->dynsym : &t->symtab;
		uint32_t off = f->name & ~FUNCTION_IN_DYNSYM;
		const char *raw = off != 0 ? elf_string_at(&t->img, &it->strtab, off) : NULL;
		if (raw == NULL || raw[0] == 0)
			continue;
		struct elf_symbol sym = {.bind = (uint8_t)(f->size_bits >> FUNCTION_BIND_SHIFT),
					 .hidden_version = (f->size_bits & FUNCTION_HIDDEN_VERSION) != 0};
		const char *shown = function_display_name(raw);
		uint32_t p = function_alias_preference(&sym, shown);
		/* Equal ranks (C1/C2 constructors, strtol/strtoq): the name that
		 * sorts first, whatever order the symbol tables list them in. */
		if (name == NULL || p > pref || (p == pref && rt_strcmp(shown, name) < 0)) {
			name = shown;
			pref = p;
			*best = f;
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
		const char *name = preferred_alias(t, first, end, &best);
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

void function_table_release_pages(const struct function_table *t)
{
	/* Only the string tables: lookups read nothing else, and the build
	 * gave back the symbol and version tables' pages as it read them. */
	const struct elf_symbol_iter *its[2] = {&t->symtab, &t->dynsym};
	for (int i = 0; i < 2; i++)
		if (its[i]->img != NULL)
			release_section(&t->img, &its[i]->strtab);
}

void function_table_free(struct function_table *t)
{
	rt_free(t->funcs);
	rt_memset(t, 0, sizeof(*t));
}
