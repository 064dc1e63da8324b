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

/* Where the names of entries are: the string tables of a table's image,
 * or the copies a scan made. */
struct name_source {
	const char *(*raw)(const struct name_source *src, uint32_t key); /* NULL: none */
	const struct elf_image *img;
	const struct elf_symbol_iter *symtab, *dynsym;
	/* A scan's copies: sorted keys, each one's offset in pool. */
	const uint64_t *keys;
	const uint32_t *offs;
	uint32_t nkeys;
	const char *pool;
};

static const char *raw_in_image(const struct name_source *src, uint32_t key)
{
	const struct elf_symbol_iter *it = (key & FUNCTION_IN_DYNSYM) ? src->dynsym : src->symtab;
	uint32_t off = key & ~FUNCTION_IN_DYNSYM;
	return off != 0 ? elf_string_at(src->img, &it->strtab, off) : NULL;
}

static const char *raw_in_pool(const struct name_source *src, uint32_t key)
{
	uint32_t i = rt_upper_bound(src->keys, src->nkeys, sizeof(src->keys[0]), 0, key);
	if (i == 0 || src->keys[i - 1] != key || src->offs[i - 1] == FUNCTION_SCAN_NO_NAME)
		return NULL;
	return src->pool + src->offs[i - 1];
}

/* The preferred named alias among the entries f[0..n) of one address, in
 * table order: its name, and its entry in *best. */
static const char *preferred_alias(const struct name_source *src, const struct function_entry *f,
				   uint32_t n, const struct function_entry **best)
{
	const char *name = NULL;
	uint32_t pref = 0;
	*best = NULL;
	for (uint32_t i = 0; i < n; i++) {
		const char *raw = src->raw(src, f[i].name);
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
		const struct name_source src = {.raw = raw_in_image, .img = &t->img,
						.symtab = &t->symtab, .dynsym = &t->dynsym};
		const char *name = preferred_alias(&src, t->funcs + first, end - first, &best);
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

/* The entries kept at one start of a scan's address range. */
struct scan_start {
	uint64_t start;
	uint32_t nalias; /* entries at this start seen (0: no start; may exceed the kept) */
	/* The kept entries' size_bits and name, in table order (by name). */
	uint32_t size_bits[FUNCTION_SCAN_ALIASES], name[FUNCTION_SCAN_ALIASES];
};

/* Adds entry e to the starts kept for its address range: the
 * FUNCTION_SCAN_STARTS greatest starts, descending, each with its first
 * FUNCTION_SCAN_ALIASES entries in table order. */
static inline void scan_keep(struct scan_start *k, const struct function_entry *e)
{
	const uint32_t last = FUNCTION_SCAN_STARTS - 1;
	if (k[last].nalias > 0 && k[last].start > e->start)
		return; /* four greater starts: never compared (most entries) */
	uint32_t i = 0;
	while (k[i].nalias > 0 && k[i].start > e->start)
		i++; /* stops by the test above */
	struct scan_start *at = &k[i];
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

/* The starts a table lookup of each address would compare, in order
 * (visit[i * FUNCTION_SCAN_STARTS + v] for v < nvisit[i]), and whether
 * the walk stopped early (SCAN_STOPPED: a start all of whose kept entries
 * cover the address and are named, so one of them answers unless every
 * name turns out empty) or met too many aliases (SCAN_TOO_MANY). */
#define SCAN_STOPPED 0x40u
#define SCAN_TOO_MANY 0x80u
static void scan_visits(const uint64_t *addrs, uint32_t n, const struct scan_start *starts,
			const struct scan_start **visit, uint8_t *nvisit)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t looked = 0, flags = 0;
		for (uint32_t r = i + 1; r > 0 && looked < FUNCTION_SCAN_STARTS && flags == 0; r--) {
			const struct scan_start *k = &starts[(size_t)(r - 1) * FUNCTION_SCAN_STARTS];
			for (uint32_t j = 0; j < FUNCTION_SCAN_STARTS && k[j].nalias > 0 &&
					     looked < FUNCTION_SCAN_STARTS && flags == 0;
			     j++) {
				if (k[j].nalias > FUNCTION_SCAN_ALIASES) {
					flags = SCAN_TOO_MANY;
					break;
				}
				visit[(size_t)i * FUNCTION_SCAN_STARTS + looked++] = &k[j];
				bool all = true;
				for (uint32_t a = 0; a < k[j].nalias; a++)
					all = all && (k[j].name[a] & ~FUNCTION_IN_DYNSYM) != 0 &&
					      addrs[i] - k[j].start < (k[j].size_bits[a] & FUNCTION_SIZE_MAX);
				if (all)
					flags = SCAN_STOPPED;
			}
		}
		nvisit[i] = (uint8_t)(looked | flags);
	}
}

/* Copies the names of keys[0..nkeys) (sorted: .symtab's by offset, then
 * .dynsym's) into *pool, each one's offset in offs (FUNCTION_SCAN_NO_NAME:
 * none or empty), reading the string tables front to back and, with
 * release, giving back what was read every RELEASE_EVERY bytes. */
static bool scan_copy_names(const struct name_source *file, const uint64_t *keys, uint32_t nkeys,
			    uint32_t *offs, struct rt_buf *pool, bool release)
{
	uint64_t released[2] = {0, 0};
	for (uint32_t i = 0; i < nkeys; i++) {
		uint32_t key = (uint32_t)keys[i];
		const char *raw = raw_in_image(file, key);
		offs[i] = FUNCTION_SCAN_NO_NAME;
		if (raw != NULL && raw[0] != 0) {
			if (pool->len >= FUNCTION_SCAN_NO_NAME - 4096)
				return false;
			offs[i] = (uint32_t)pool->len;
			rt_buf_append(pool, raw, rt_strlen(raw) + 1);
		}
		int d = (key & FUNCTION_IN_DYNSYM) != 0;
		const struct elf_section *strtab = d ? &file->dynsym->strtab : &file->symtab->strtab;
		uint64_t at = key & ~FUNCTION_IN_DYNSYM;
		if (release && at - released[d] >= RELEASE_EVERY) {
			release_pages(file->img, strtab->offset + released[d], strtab->offset + at);
			released[d] = at;
		}
	}
	if (release)
		release_string_tables(file->img, file->symtab, file->dynsym);
	return !pool->failed;
}

/* Fills s->answers from the kept starts: the names each address's walk
 * needs, read once each in string table order, then ranked as a table
 * lookup ranks them. */
static bool scan_answer(struct function_scan *s, const struct scan_start *starts,
			const struct name_source *file, bool release)
{
	size_t nv = (size_t)s->n * FUNCTION_SCAN_STARTS;
	const struct scan_start **visit = rt_malloc(nv * sizeof(const struct scan_start *));
	uint8_t *nvisit = rt_malloc(s->n);
	uint64_t *keys = NULL;
	uint32_t *offs = NULL, nkeys = 0;
	struct rt_buf pool = {0};
	bool ok = false;
	if (visit == NULL || nvisit == NULL)
		goto out;
	scan_visits(s->addrs, s->n, starts, visit, nvisit);
	size_t nalias = 0;
	for (uint32_t i = 0; i < s->n; i++)
		for (uint32_t v = 0; v < (nvisit[i] & 7u); v++)
			nalias += RT_MIN(visit[(size_t)i * FUNCTION_SCAN_STARTS + v]->nalias, FUNCTION_SCAN_ALIASES);
	keys = rt_malloc((2 * nalias + 1) * sizeof(*keys));
	if (keys == NULL)
		goto out;
	for (uint32_t i = 0; i < s->n; i++)
		for (uint32_t v = 0; v < (nvisit[i] & 7u); v++) {
			const struct scan_start *k = visit[(size_t)i * FUNCTION_SCAN_STARTS + v];
			for (uint32_t a = 0; a < RT_MIN(k->nalias, FUNCTION_SCAN_ALIASES); a++)
				keys[nkeys++] = k->name[a];
		}
	rt_sort_u64(keys, nkeys, keys + nkeys);
	uint32_t unique = 0;
	for (uint32_t i = 0; i < nkeys; i++)
		if (unique == 0 || keys[i] != keys[unique - 1])
			keys[unique++] = keys[i];
	nkeys = unique;
	offs = rt_malloc(((size_t)nkeys + 1) * sizeof(*offs));
	/* Room for names of a C++ library's usual length, grown if need be. */
	if (offs == NULL || !rt_buf_reserve(&pool, (size_t)nkeys * 64 + 64) ||
	    !scan_copy_names(file, keys, nkeys, offs, &pool, release))
		goto out;
	const struct name_source copies = {.raw = raw_in_pool, .keys = keys, .offs = offs,
					   .nkeys = nkeys, .pool = (const char *)pool.data};
	for (uint32_t i = 0; i < s->n; i++) {
		uint32_t answer = (nvisit[i] & SCAN_TOO_MANY) ? FUNCTION_SCAN_REFUSED
			: (nvisit[i] & SCAN_STOPPED)	      ? FUNCTION_SCAN_REFUSED
							      : FUNCTION_SCAN_NO_NAME;
		for (uint32_t v = 0; v < (nvisit[i] & 7u); v++) {
			const struct scan_start *k = visit[(size_t)i * FUNCTION_SCAN_STARTS + v];
			struct function_entry f[FUNCTION_SCAN_ALIASES];
			uint32_t na = RT_MIN(k->nalias, FUNCTION_SCAN_ALIASES);
			for (uint32_t a = 0; a < na; a++)
				f[a] = (struct function_entry){.start = k->start, .size_bits = k->size_bits[a],
							       .name = k->name[a]};
			const struct function_entry *best;
			const char *name = preferred_alias(&copies, f, na, &best);
			if (name != NULL && s->addrs[i] - best->start < function_size(best)) {
				answer = (uint32_t)(name - (const char *)pool.data);
				break;
			}
		}
		s->answers[i] = answer;
	}
	s->pool = (char *)pool.data;
	s->bytes += pool.cap;
	pool.data = NULL;
	ok = true;
out:
	rt_buf_free(&pool);
	rt_free(visit);
	rt_free(nvisit);
	rt_free(keys);
	rt_free(offs);
	return ok;
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
	struct elf_image im = *img;
	struct elf_symbol_iter symtab, dynsym;
	open_tables(&im, with_dynsym, &symtab, &dynsym);
	/* index[b]: the first address at or above lo + (b << shift). */
	uint64_t lo = addrs[0], hi = addrs[n - 1];
	uint32_t index_bits = 1;
	while (index_bits < 26 && (1u << index_bits) < n * SCAN_INDEX_PER_ADDR)
		index_bits++;
	uint32_t shift = 0;
	while (shift < 63 && ((hi - lo) >> shift) >= (1ull << index_bits))
		shift++;
	size_t nindex = (size_t)((hi - lo) >> shift) + 1;
	size_t addr_bytes = (size_t)n * sizeof(uint64_t);
	uint32_t *index = rt_malloc(nindex * sizeof(uint32_t));
	struct scan_start *starts = rt_calloc((size_t)n * FUNCTION_SCAN_STARTS, sizeof(*starts));
	s->addrs = rt_malloc(addr_bytes);
	s->answers = rt_malloc((size_t)n * sizeof(uint32_t));
	if (index == NULL || starts == NULL || s->addrs == NULL || s->answers == NULL) {
		rt_free(index);
		rt_free(starts);
		function_scan_free(s);
		return false;
	}
	rt_memcpy(s->addrs, addrs, addr_bytes);
	s->n = n;
	s->bytes = addr_bytes + (size_t)n * sizeof(uint32_t);
	for (size_t b = 0, i = 0; b < nindex; b++) {
		uint64_t from = lo + ((uint64_t)b << shift);
		while (i < n && addrs[i] < from)
			i++;
		index[b] = (uint32_t)i;
	}
	/* Each entry goes to the first address at or above its start: the
	 * range (addrs[i-1], addrs[i]] it lies in.  An address's nearest
	 * starts are then its own range's, then the ranges below, in turn. */
	struct elf_symbol_iter *its[2] = {&symtab, &dynsym};
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
			scan_keep(&starts[(size_t)i * FUNCTION_SCAN_STARTS], &e);
		}
		entry_reader_end(&r);
	}
	rt_free(index);
	const struct name_source file = {.raw = raw_in_image, .img = &im, .symtab = &symtab,
					 .dynsym = &dynsym};
	bool ok = scan_answer(s, starts, &file, release_pages);
	rt_free(starts);
	if (!ok)
		function_scan_free(s);
	return ok;
}

bool function_scan_lookup(const struct function_scan *s, uint64_t addr, const char **name)
{
	uint32_t i = rt_upper_bound(s->addrs, s->n, sizeof(s->addrs[0]), 0, addr);
	*name = NULL;
	if (i == 0 || s->addrs[i - 1] != addr || s->answers[i - 1] == FUNCTION_SCAN_REFUSED)
		return false;
	if (s->answers[i - 1] != FUNCTION_SCAN_NO_NAME)
		*name = (const char *)s->pool + s->answers[i - 1];
	return true;
}

void function_scan_free(struct function_scan *s)
{
	rt_free(s->addrs);
	rt_free(s->answers);
	rt_free(s->pool);
	rt_memset(s, 0, sizeof(*s));
}
