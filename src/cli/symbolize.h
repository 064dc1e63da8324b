/* Offline symbolization: names, source lines and inlined frames for the
 * locations of profiles written from stripped binaries, from debug files
 * found under directories the user gives (matched by GNU build id, never by
 * name).  `stowaway symbolize` rewrites the profiles; report, flame and
 * folded take the same --debug-dir option and symbolize in memory. */
#ifndef STOWAWAY_CLI_SYMBOLIZE_H
#define STOWAWAY_CLI_SYMBOLIZE_H

#include <stddef.h>

#include "cli/pprof.h"

/* Debug files under some directories, opened on first use. */
struct debug_store;

/* dirs[0..n): each searched for <dir>/.build-id/xx/rest.debug, then for any
 * ELF file (up to 8 levels down) with the wanted build id. */
struct debug_store *debug_store_new(char *const *dirs, size_t n);
void debug_store_free(struct debug_store *ds);

struct symbolize_stats {
	size_t locations;   /* locations of mappings with a build id */
	size_t symbolized;  /* given new lines */
	size_t inlined;     /* of those, with more than one line */
};

/* Gives every location of a mapping whose debug file is found, and that
 * lacks a line number, lines from the debug file (innermost first);
 * functions and strings are appended to p.  touched[mapping index] is set
 * for mappings whose locations changed, changed[location index] for those
 * locations (arrays of p->n_mappings and p->n_locations; either may be NULL). */
void symbolize_profile(struct pp_profile *p, struct debug_store *ds, unsigned char *touched,
		       unsigned char *changed, struct symbolize_stats *st);

/* Symbolizes every loaded profile in memory (report, flame, ... --debug-dir). */
struct input_set;
void inputs_symbolize(struct input_set *set, char *const *dirs, size_t n_dirs);

/* `stowaway symbolize PROFILE... --debug-dir DIR... [-o OUT]`. */
int cmd_symbolize(int argc, char **argv);

#endif
