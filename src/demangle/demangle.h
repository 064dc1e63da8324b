/* Symbol demangling: Itanium C++ (_Z...) into the form c++filt prints;
 * Rust legacy (_ZN...17h<hash>E) as c++filt prints it without the hash,
 * and Rust v0 (_R...) as llvm-cxxfilt and rustfilt print it (no crate
 * hashes), the forms perf shows.
 *
 * Freestanding and self-contained (no libc, no rt/): the library, the CLI
 * and the fuzzer compile it as is.  No recursion: the parsers run on
 * explicit stacks of fixed depth, every table is a fixed array inside
 * struct demangle_scratch, and the work is linear in the input size (each
 * step consumes input or finishes a rule), so time and memory are bounded
 * whatever the input.  Anything outside what is handled, or past a limit,
 * gives 0 and the caller keeps the mangled name.
 *
 * Thread-safe: all state is in the caller's scratch (about 80 KiB: keep it
 * off small stacks; it is not meant for signal handlers). */
#ifndef STOWAWAY_DEMANGLE_DEMANGLE_H
#define STOWAWAY_DEMANGLE_DEMANGLE_H

#include <stddef.h>
#include <stdint.h>

/* Longest mangled name considered (longer ones are kept as they are). */
#define DEMANGLE_MAX_INPUT 4096u
#define DEMANGLE_MAX_NODES 2048u
#define DEMANGLE_MAX_DEPTH 256u

struct demangle_node {
	uint8_t kind, quals;
	uint16_t flags;
	uint32_t a, b, c;
	const char *s;
	uint32_t len;
};

struct demangle_scratch {
	struct demangle_node nodes[DEMANGLE_MAX_NODES];
	uint32_t values[DEMANGLE_MAX_NODES];    /* parse value stack */
	uint32_t lists[DEMANGLE_MAX_NODES];     /* list items */
	uint32_t subs[DEMANGLE_MAX_NODES];      /* substitution candidates */
	uint32_t frames[DEMANGLE_MAX_DEPTH][6]; /* parse / print stack */
	char text[4096];                        /* decoded literals and identifiers */
};

/* Whether `name` has the prefix of a scheme demangle() reads (_Z: Itanium
 * and Rust legacy, _R: Rust v0): a cheap gate before the call. */
static inline int demangle_has_prefix(const char *name)
{
	return name != 0 && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* Writes the demangled form of `name` (NUL-terminated) into out[cap] and
 * returns its length, or 0 (out[0] = 0 when cap > 0) if `name` is not a
 * mangled name this demangler reads, or the result does not fit. */
size_t demangle(const char *name, char *out, size_t cap, struct demangle_scratch *scratch);

/* Each scheme alone (same contract); demangle() picks by prefix. */
size_t demangle_itanium(const char *name, size_t len, char *out, size_t cap,
			struct demangle_scratch *scratch);
size_t demangle_rust_legacy(const char *name, size_t len, char *out, size_t cap);
size_t demangle_rust_v0(const char *name, size_t len, char *out, size_t cap,
			struct demangle_scratch *scratch);

#endif
