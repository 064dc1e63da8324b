/* The module registry: a snapshot of the process's executable mappings with
 * their ELF facts (path, build id, load bias, where .eh_frame and
 * .eh_frame_hdr are loaded), which it publishes to the unwinder (unwind.h)
 * with each module's unwind rules read in place (unwind/cfi.h cfi_index).
 * Function symbols (.symtab/.dynsym) and debug information are read only
 * for modules a resolved pc lies in, on first use.
 *
 * Everything here runs OFF the signal path (it reads /proc/self/maps, maps
 * ELF files, allocates, and takes the registry mutex).
 */
#ifndef STOWAWAY_SYMBOLS_SYMBOLS_H
#define STOWAWAY_SYMBOLS_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbols/frame.h"

/* Where separate debug files are searched besides /usr/lib/debug
 * (':'-separated roots, copied), how many bytes one module's DWARF index
 * may hold (0: DWARF is not read), the share of the process's CPU, in
 * parts per million, that inflating compressed debug sections may take
 * beyond 1 ms (0: no bound), and the cap on all of the profiler's CPU in
 * the same unit (0: none), of which reading takes no more than what the
 * rest of the profiler leaves (debuginfo.h).  Call before the first refresh. */
void symbols_configure(const char *debug_dirs, size_t dwarf_budget, uint32_t inflate_ppm,
		       uint32_t cap_ppm);

/* What the profiler has spent in this process, reading debug information
 * on its own threads included (debuginfo_note_profiler_cost).  Before an
 * export. */
void symbols_note_profiler_cost(uint64_t spent_ns);

/* Rereads /proc/self/maps; loads modules that appeared, retires the ones that
 * disappeared, and publishes a new unwind snapshot.  Cheap when the maps did
 * not change.  Call at start, after dlopen/dlclose (see
 * unwind_code_reads_pause for dlclose), and periodically (every few seconds)
 * for threads' new stacks and code mapped by other means.  Any thread; the
 * calls are serialized internally.  False if /proc/self/maps could not be
 * read or memory ran out (the previous state stays). */
bool symbols_refresh(void);

/* After the host loaded code (dlopen): adds the executable segments of
 * loaded objects that no mapping holds yet, from the loader's own list
 * (dl_iterate_phdr) and, per new segment, the kernel's name for its mapping
 * (/proc/self/map_files) and its file's identity, without reading
 * /proc/self/maps, whose cost grows with every mapping of the process (a
 * program loading hundreds of libraries would read it hundreds of times).
 * The stack ranges stay those of the last refresh.  False if it could not
 * (no loader list, a segment not mapped where the loader says, a mapping
 * that overlaps a known one, memory): the caller then refreshes. */
bool symbols_add_loaded(void);
/* How many refreshes so far found the executable mappings changed: equal
 * before and after a refresh, no code was mapped or unmapped in between
 * (other mappings, a heap's or a stack's, may have been). */
uint64_t symbols_code_changes(void);

/* Resolves pc (as written by unwind_stack: return addresses already -1).
 * Fills `out` with the executable mapping containing pc (map_path "" and
 * zero range if none) and the function whose [start, start+size) contains
 * it, else function = NULL: a pc past the end of the nearest symbol is not
 * that symbol.  When the module has DWARF (in the file or a separate debug
 * file, see debuginfo.h), also the source file and line and the frames
 * inlined at pc; the module's index is built on first use, on the calling
 * thread.  `ctx` is unused (callback signature of the encoder).
 * The strings stay valid until symbols_collect_garbage().  Returns false
 * only if pc is in no known executable mapping. */
bool symbols_resolve(void *ctx, uint64_t pc, struct sw_frame_info *out);

/* Resolves the frames a process forks from, for the children it forks
 * afterwards, which inherit the tables and DWARF index built for them.
 * With with_allowance, reading their modules' debug information spends the
 * fixed allowance debuginfo_share_for_children gives, not this process's
 * share of its own CPU (a prefork parent has used little when it first
 * forks), so the index every child's own lookups need is built once, here. */
void symbols_resolve_for_children(const uint64_t *pcs, uint32_t n, bool with_allowance);
/* The path of the module whose executable mapping holds pc, as
 * /proc/self/maps names it, copied into buf (NUL-terminated); false if no
 * known mapping holds pc.  Reads no symbol. */
bool symbols_module_path(uint64_t pc, char *buf, size_t cap);

/* Whether the module whose executable mapping holds pc defines function
 * `name` in its .dynsym: 1 yes, 0 no (an executable's canonical PLT entry,
 * an undefined symbol with an address that a lookup returns, is not a
 * definition), -1 unknown (no module there, or its file is unreadable).
 * A pass over the table: not for a hot path. */
int symbols_module_defines(uint64_t pc, const char *name);

/* Which of names[0..n) the module whose executable mapping holds pc names
 * in its symbol tables (.symtab, else .dynsym; defined or imported, local
 * or global): the index of the first found, or -1 (none, or no module
 * there).  Reads the whole string tables once, a cost that grows with the
 * file (about 2 ms for cargo's 5 MB), and gives their pages back: for a
 * caller off the start path; a table over SYMBOLS_NAMES_SCAN_MAX is not
 * read. */
#define SYMBOLS_NAMES_SCAN_MAX (64ull << 20)
int symbols_module_names_any(uint64_t pc, const char *const *names, uint32_t n);

/* Readies the function names of pcs (ascending and distinct: the pcs an
 * export is about to resolve) for the symbols_resolve calls that follow.
 * A module whose function table is not built yet, and of whose symbols
 * few are asked, gets those names by one pass over its symbol tables
 * (functions.h function_scan) instead of building and sorting a table of
 * every symbol; the names are the same.  Its other pcs, later, build the
 * table as before; so does every module after two scans (a process that
 * keeps exporting).  The names are copies, read in string table order, held
 * while the module lives (bytes per pc, not per symbol).  Optional: without
 * it symbols_resolve builds tables. */
void symbols_prepare_names(const uint64_t *pcs, uint32_t n);

/* Frees modules unloaded by earlier refreshes once no unwinder can use their
 * tables.  Call from the thread that consumes symbols_resolve() results, at
 * a point where it holds none of those strings (e.g. after encoding). */
void symbols_collect_garbage(void);

/* Bounds [lo, hi) of the readable-writable anonymous mapping containing sp,
 * read fresh from /proc/self/maps.  For the thread registration path: a new
 * thread calls it with the address of a local and hands the bounds to the
 * unwinder in unwind_regs.stack_lo/stack_hi, so its samples need not wait
 * for the next refresh (until then its stack reads go through the kernel). */
bool symbols_stack_bounds_of(uint64_t sp, uint64_t *lo, uint64_t *hi);

/* Gives back the memory of the file pages unwinds read since they were
 * last given back (they stay mapped; later reads fault them in again) once
 * those pages may hold more than keep_unwind_bytes (counted in the 64 KiB
 * windows the kernel maps around a fault: an upper bound), so the unwind
 * rules' resident memory stays within keep_unwind_bytes plus what one
 * period between calls reads, and pages read again and again are not
 * faulted in again and again while under it; 0 gives them all back.  Also
 * gives back the pages debug-information lookups read.  Call periodically
 * from a thread that is not in a signal handler; skips the work if the
 * registry is busy. */
void symbols_trim(uint64_t keep_unwind_bytes);

/* In a fork child: the registry lock may have been held by a thread that no
 * longer exists, and so may the unwinder's last rows (unwind.h). */
void symbols_after_fork_child(void);

/* What the registry holds (logs, the profile's comment, tests).  Nothing
 * grows with a module's size until a pc in it is resolved, except the search
 * table of a module without .eh_frame_hdr. */
struct symbols_stats {
	uint32_t modules;           /* mapped now */
	uint32_t modules_named;     /* files whose function symbols were read (a pc resolved) */
	uint32_t modules_with_lines; /* whose debug information is open */
	uint32_t unwind_in_place;   /* unwound through their own .eh_frame_hdr */
	uint32_t unwind_built;      /* unwound through a search table built here */
	uint64_t functions;         /* function symbols held */
	uint64_t function_bytes;    /* heap bytes of those tables */
	uint64_t unwind_bytes;      /* heap bytes of built search tables */
	/* Since start: function names looked up in a module's symbols, answered
	 * from the cache of names already looked up, and releases of the file
	 * pages lookups read (one per 64 lookups in a module); of the names
	 * looked up, those symbols_prepare_names readied by a scan. */
	uint64_t names_looked_up, names_from_cache, name_page_releases, names_from_scans;
};
void symbols_stats(struct symbols_stats *st);

/* One line of those facts and the unwinder's counts (unwind_counts) for the
 * profile's comment; returns its length as rt_snprintf does. */
size_t symbols_describe(char *buf, size_t cap);

#endif
