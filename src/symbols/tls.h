/* Thread-local variables exported by the host's modules: finds a TLS
 * symbol (STT_TLS, defined) in the dynamic symbol table of the executable
 * and of every loaded library, and says where each thread's copy lives.
 *
 * Where the module's TLS block is in static TLS (the executable and the
 * libraries loaded with it, and on glibc libraries whose block was later
 * placed in the static surplus), the variable lies at a fixed distance from
 * every thread's thread pointer: address = thread pointer + tp_delta, read
 * from any thread without asking the loader.  Elsewhere (dynamic TLS,
 * allocated per thread on first use) there is no such distance and the
 * module is reported as dynamic.
 *
 * Off the signal path: calls the host's dl_iterate_phdr (which takes the
 * loader's lock).  The module tables are read from memory as the loader
 * mapped them (PT_DYNAMIC: DT_GNU_HASH or DT_HASH, DT_SYMTAB, DT_STRTAB),
 * so nothing is read from disk. */
#ifndef STOWAWAY_SYMBOLS_TLS_H
#define STOWAWAY_SYMBOLS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tls_symbol_site {
	uint64_t module_base;  /* load bias of the defining module (dlpi_addr) */
	const char *module;    /* its path as the loader names it ("" for the executable) */
	uint64_t symbol_value; /* st_value: offset inside the module's TLS block */
	uint64_t symbol_size;
	size_t tls_modid;      /* the loader's module id */
	bool is_static;        /* tp_delta is valid for every thread */
	intptr_t tp_delta;     /* variable address - thread pointer, when is_static */
};

/* Calls `found` for each module defining `name` as a TLS symbol, in the
 * loader's order.  A module's block is taken to be static when the calling
 * thread's copy lies within `static_extent` bytes of its thread pointer
 * (the static TLS area sits next to the thread control block; dynamic blocks
 * come from the loader's malloc; a block the calling thread has not
 * allocated yet is dynamic).  Returns the
 * number of modules found, or -1 when the host has no dl_iterate_phdr. */
typedef void (*tls_symbol_found_fn)(const struct tls_symbol_site *site, void *ctx);
int tls_symbol_sites(const char *name, size_t static_extent, tls_symbol_found_fn found, void *ctx);

/* Lookup of `name` in one module's in-memory dynamic tables (exposed for
 * tests): the defined symbol's st_value, st_size and st_info type.  `base` is
 * the module's load bias, `dynamic` its PT_DYNAMIC in memory. */
bool tls_dynsym_lookup(uint64_t base, const void *dynamic, const char *name, uint64_t *value,
		       uint64_t *size, uint8_t *type);

#endif
