/* Function names of one ELF file, and the rules that make a name the one a
 * person knows.  Every source of function names (.symtab and .dynsym of a
 * loaded module or of a separate debug file, DWARF subprograms and inlined
 * subroutines) goes through function_display_name; where one address has
 * several symbols, the table keeps the one function_alias_preference ranks
 * highest.  Not for signal handlers (it allocates). */
#ifndef STOWAWAY_SYMBOLS_FUNCTIONS_H
#define STOWAWAY_SYMBOLS_FUNCTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "symbols/elf.h"

/* One sized function symbol in 16 bytes: its name is read from the file's
 * string table when asked for; what ranks it among aliases besides its name
 * (binding, version) is kept with its size, so a lookup never reads the
 * symbol table again. */
struct function_entry {
	uint64_t start; /* link-time */
	/* The size (capped at FUNCTION_SIZE_MAX), FUNCTION_HIDDEN_VERSION, and
	 * the STB_* binding from bit FUNCTION_BIND_SHIFT (see function_size). */
	uint32_t size_bits;
	/* Offset of the name in the string table of .symtab, or of .dynsym
	 * with FUNCTION_IN_DYNSYM. */
	uint32_t name;
};
#define FUNCTION_IN_DYNSYM 0x80000000u
#define FUNCTION_SIZE_MAX ((1u << 29) - 1u) /* 512 MiB */
#define FUNCTION_HIDDEN_VERSION (1u << 29)
#define FUNCTION_BIND_SHIFT 30

static inline uint32_t function_size(const struct function_entry *f)
{
	return f->size_bits & FUNCTION_SIZE_MAX;
}

/* Sorted by start; aliases of one address are adjacent.  Names stay in the
 * image (only the names a lookup lands on are read, in the string tables),
 * so the image must stay mapped while the table is used. */
struct function_table {
	struct function_entry *funcs;
	uint32_t nfuncs;
	struct elf_image img;
	struct elf_symbol_iter symtab, dynsym; /* count 0: not used */
	size_t bytes; /* heap bytes held */
	uint64_t sort_steps; /* what function_entries_sort reported */
};

/* The name shown for a function named `name` by any source: glibc's
 * internal aliases lose their prefix (__GI_free is free).  Points into name;
 * NULL stays NULL. */
const char *function_display_name(const char *name);

/* Rank of `name` (already a display name) among the symbols of one address:
 * global over weak over local, the default symbol version over an old one,
 * fewer leading underscores, then the shorter name. */
uint32_t function_alias_preference(const struct elf_symbol *sym, const char *name);

/* Fills t from the sized function symbols of img's .symtab and, when
 * with_dynsym, its .dynsym (and their versions), reading no string table.  img's
 * bytes must outlive t.  With release_pages (img is a read-only private file
 * mapping), the symbol tables' pages are given back as they are read, so
 * reading a large table does not hold all of it at once.  False (t empty)
 * if there are none or memory ran out. */
bool function_table_build(struct function_table *t, const struct elf_image *img, bool with_dynsym,
			  bool release_pages);

/* Sorts f[0..n) into table order: by start, then by name (.symtab before
 * .dynsym, each by the name's offset), an order that does not depend on the
 * sort.  *steps counts the entries moved and compared: a few n (one n per
 * radix pass, 13 bits of the span each), not n log n.  False if memory ran
 * out (f then unchanged). */
bool function_entries_sort(struct function_entry *f, uint32_t n, uint64_t *steps);

/* The function containing link-time address addr, or NULL: among aliases of
 * its address the one function_alias_preference ranks highest, shown as
 * function_display_name gives it.  Points into the image. */
const char *function_table_lookup(const struct function_table *t, uint64_t addr);

/* Gives back the pages of t's string tables, which lookups read (built
 * with release_pages: img is a read-only private file mapping, so names
 * handed out stay readable; the build gave back the symbol and version
 * tables' pages already). */
void function_table_release_pages(const struct function_table *t);

void function_table_free(struct function_table *t);

/* The names of a few known addresses, by one pass over the symbol tables
 * and no table of them: for a large library of which an export asks a few
 * hundred addresses, it reads what function_table_build reads but neither
 * keeps nor sorts an entry per symbol.  For each address it keeps the
 * entries a table lookup would compare (the aliases of the four nearest
 * starts at or below it), then reads the names those need in string table
 * order (each page once) and copies them, so function_scan_lookup gives
 * the names function_table_lookup gives on the same image, from the copies
 * (it reads no file page). */
#define FUNCTION_SCAN_STARTS 4u  /* the starts a table lookup looks back over */
#define FUNCTION_SCAN_ALIASES 8u /* entries kept per start; more: not answered */
struct function_scan {
	uint64_t *addrs; /* the addresses asked, ascending and distinct */
	uint32_t *answers; /* per address: its name's offset in pool, or the two below */
	uint32_t n;
	char *pool; /* the names answered, NUL-terminated */
	size_t bytes; /* heap bytes held */
};
#define FUNCTION_SCAN_REFUSED UINT32_MAX        /* left to the table */
#define FUNCTION_SCAN_NO_NAME (UINT32_MAX - 1u) /* in no symbol */

/* How many symbols a table of img would be built from (both tables'
 * entries, functions or not): what a scan or a build reads. */
uint64_t function_symbols_in(const struct elf_image *img, bool with_dynsym);

/* Scans img's symbols (as function_table_build with the same with_dynsym
 * and release_pages would read them; with release_pages the string
 * tables' pages read are given back too) for the n link-time addresses
 * addrs (ascending, distinct; copied).  s needs nothing of img afterwards.
 * False (s empty) if memory ran out or addrs are not ascending. */
bool function_scan_build(struct function_scan *s, const struct elf_image *img, bool with_dynsym,
			 bool release_pages, const uint64_t *addrs, uint32_t n);

/* For an address the scan was built for, sets *name to what
 * function_table_lookup gives (NULL included; the same string, in s's own
 * copy) and returns true; false for an address it was not asked, or one
 * among more aliases than it keeps.  Names stay valid until
 * function_scan_free. */
bool function_scan_lookup(const struct function_scan *s, uint64_t addr, const char **name);

void function_scan_free(struct function_scan *s);

#endif
