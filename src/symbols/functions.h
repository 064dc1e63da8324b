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

struct function_entry {
	uint64_t start, size; /* link-time */
	uint32_t name;        /* offset into the table's names */
	uint32_t pref;        /* among aliases of one address, the highest is kept */
};

/* Sorted by start, one entry per address. */
struct function_table {
	struct function_entry *funcs;
	uint32_t nfuncs;
	char *names;
	size_t bytes; /* heap bytes held */
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
 * with_dynsym, its .dynsym.  False (t empty) if there are none or memory ran
 * out. */
bool function_table_build(struct function_table *t, const struct elf_image *img, bool with_dynsym);

/* The function containing link-time address addr, or NULL. */
const char *function_table_lookup(const struct function_table *t, uint64_t addr);

void function_table_free(struct function_table *t);

#endif
