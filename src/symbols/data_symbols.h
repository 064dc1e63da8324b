/* Data symbols: the writable OBJECT symbols (.symtab, else .dynsym) of the
 * loaded ELF files, so an address in a module's data (a global mutex) can
 * be named.  Built off the signal path; a built index is read-only and may
 * be read from any thread at any time. */
#ifndef STOWAWAY_SYMBOLS_DATA_SYMBOLS_H
#define STOWAWAY_SYMBOLS_DATA_SYMBOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "rt/rt.h"

/* Sorted [start, start+size) runtime ranges with names. */
struct data_symbol {
	uint64_t start, size;
	uint32_t name; /* offset into the index's names */
};
struct data_symbol_index {
	struct data_symbol *syms;
	uint32_t n, cap;
	struct rt_buf names; /* NUL-terminated names, back to back */
};

/* The index of every module mapped now (each file once, from its mapping
 * at offset 0); NULL when out of memory.  Free with data_symbols_free and
 * rt_free. */
struct data_symbol_index *data_symbols_build(void);

/* Adds the writable OBJECT symbols of one ELF image loaded with `bias`
 * (runtime = link-time + bias) to a growing index; call data_symbols_finish
 * once after the last image.  False when out of memory. */
struct elf_image;
bool data_symbols_add_image(struct data_symbol_index *idx, const struct elf_image *img,
			    uint64_t bias);
void data_symbols_finish(struct data_symbol_index *idx);
void data_symbols_free(struct data_symbol_index *idx);

/* The symbol whose range contains addr, or NULL (also for idx NULL). */
const struct data_symbol *data_symbols_find(const struct data_symbol_index *idx, uint64_t addr);

#endif
