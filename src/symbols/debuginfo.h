/* Debug information of one module: the file that holds its DWARF (the
 * binary itself, or a separate debug file found by build id or
 * .gnu_debuglink and verified), mapped read-only, with a lazily built DWARF
 * index over it (dwarf/dwarf.h).
 *
 * Separate debug files are searched, in order, under each directory of
 * STOWAWAY_DEBUG_DIRS (':'-separated) and then /usr/lib/debug:
 *   <root>/.build-id/<xx>/<rest>.debug   (the file's GNU build id must match)
 * and for a binary /d/bin with .gnu_debuglink NAME (the file's CRC-32 must match):
 *   /d/NAME, /d/.debug/NAME, <root>/d/NAME
 *
 * Sections compressed with SHF_COMPRESSED (zlib, as -gz writes them) are
 * inflated into memory counted against the budget.  When the file has
 * .debug_aranges, compressed .debug_info, .debug_abbrev and .debug_line
 * are inflated only where lookups need them (the pages of the units hit,
 * streamed from resume points kept every 256 KiB of output), within half
 * the budget; past that bound one warning is logged and lookups needing
 * more report DWARF_OVER_BUDGET.
 *
 * Not for signal handlers (opens, maps, allocates). */
#ifndef STOWAWAY_SYMBOLS_DEBUGINFO_H
#define STOWAWAY_SYMBOLS_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/dwarf.h"
#include "symbols/elf.h"

/* Longest .gnu_debuglink name we keep. */
#define DEBUGLINK_NAME_MAX 256

/* What a binary says about where its debug information is. */
struct debug_ref {
	char build_id[ELF_BUILD_ID_HEX_CAP]; /* "" if none */
	char debuglink[DEBUGLINK_NAME_MAX];   /* "" if none */
	uint32_t debuglink_crc;
	bool has_dwarf; /* the binary itself has .debug_info */
};

/* Reads the build id, .gnu_debuglink and whether .debug_info is present. */
void debug_ref_read(const struct elf_image *img, struct debug_ref *ref);

struct debuginfo;

/* Finds and opens the debug information of the binary at `path` described by
 * ref: the binary itself if it has DWARF, else the first separate file that
 * verifies.  dirs: ':'-separated extra roots searched before /usr/lib/debug
 * (NULL or "": none).  budget: bytes the DWARF index may hold.  NULL if
 * nothing usable was found.  If the file found needs more inflating than the
 * CPU share allows now (see debuginfo_limit_inflating), it is returned with
 * its DWARF not loaded and *deferred set to the bytes that needs (else 0):
 * its .symtab names code at once (debuginfo_symbol), its lookups answer
 * DWARF_DEFERRED until debuginfo_load_deferred succeeds. */
struct debuginfo *debuginfo_open(const char *path, const struct debug_ref *ref, const char *dirs,
				 size_t budget, uint64_t *deferred);
/* Loads the DWARF of a debuginfo opened with it deferred.  True once loaded;
 * false with *deferred set if the CPU share still does not allow it, false
 * with *deferred 0 if it cannot be loaded at all. */
bool debuginfo_load_deferred(struct debuginfo *di, size_t budget, uint64_t *deferred);
/* Whether the CPU share now allows a deferred load that needs `bytes`
 * inflated; if not, it counts as a deferred lookup.  Cheap: asked before
 * each retry, it spares pricing the sections again only to be deferred (a
 * process resolving many pcs of that binary at exit). */
bool debuginfo_load_allowed(uint64_t bytes);
/* Opens one file as debug information if its build id equals build_id
 * (NULL: not checked). */
struct debuginfo *debuginfo_open_file(const char *path, const char *build_id, size_t budget);
void debuginfo_free(struct debuginfo *di);

/* The path of the file the DWARF comes from. */
const char *debuginfo_path(const struct debuginfo *di);

/* Frames at link-time address addr (see dwarf_lookup), their names shown
 * as function_display_name gives them. */
enum dwarf_lookup_status debuginfo_lookup(struct debuginfo *di, uint64_t addr,
					  struct dwarf_frame frames[DWARF_MAX_FRAMES], uint32_t *n);

/* The link-time address of the byte `rel` bytes into an executable mapping
 * of the binary that starts at file offset map_offset: through the PT_LOAD
 * headers' file extents when the file has them (an unstripped binary), else
 * (a debug file, whose headers keep addresses but not file extents) through
 * the executable PT_LOAD that starts at that offset or the only one. */
bool debuginfo_mapping_vaddr(const struct debuginfo *di, uint64_t map_offset, uint64_t rel,
			     uint64_t *vaddr);

/* The .symtab function containing link-time address addr, or NULL (for
 * code the DWARF does not cover; built on first use): among aliases of one
 * address the one function_alias_preference ranks highest, shown as
 * function_display_name gives it. */
const char *debuginfo_symbol(struct debuginfo *di, uint64_t addr);

/* Gives back the memory of the file pages read since the last call (the
 * mapping stays; later reads fault them in again). */
void debuginfo_trim(struct debuginfo *di);

/* Bytes held now and at the peak: inflated sections and the index (the
 * mapped file, page cache shared with everyone, is not counted). */
size_t debuginfo_bytes(const struct debuginfo *di);
size_t debuginfo_peak_bytes(const struct debuginfo *di);

/* Bytes inflated from compressed sections since opening (work, not memory). */
uint64_t debuginfo_inflated_bytes(const struct debuginfo *di);

/* CRC-32 of .gnu_debuglink (the gzip CRC-32) of a whole file; false if unreadable. */
bool debuginfo_file_crc(const char *path, uint32_t *crc);

/* Bounds the CPU this process spends inflating compressed debug sections on
 * demand to 1 ms plus `ppm` parts per million of its CPU time so far (0, the
 * default: no bound), and by what `cap_ppm`, the cap on all of the
 * profiler's CPU in the same unit (0: none), leaves after what the profiler
 * spent apart from reading (debuginfo_note_profiler_cost).  A lookup whose
 * unit would take more is not made: debuginfo_lookup reports
 * DWARF_DEFERRED.  Counts restart in a fork child. */
void debuginfo_limit_inflating(uint32_t ppm, uint32_t cap_ppm);
/* What the profiler has spent in this process (overhead_spent_ns, noted by
 * the caller before an export), which counts the reading done so far on
 * its own threads: the rest, that reading taken out, is what the cap's
 * allowance for reading leaves room after.  Restarts at 0 in a fork child
 * until noted there. */
void debuginfo_note_profiler_cost(uint64_t spent_ns);
/* The spent_ns last noted in this process, reading taken out, and what
 * the cap allows all of the profiler at the CPU behind the share now (0:
 * no cap). */
uint64_t debuginfo_profiler_ns(uint64_t *cap_ns);
/* While on, reading debug information spends, instead of that share, a
 * fixed allowance (8 ms once per process): for a parent reading what the
 * frames of its fork call need, which the children it forks afterwards
 * inherit instead of each reading it again. */
void debuginfo_share_for_children(bool on);
/* Lookups deferred so far by that bound, in this process. */
uint64_t debuginfo_deferred_lookups(void);
/* CPU this process has spent reading DWARF under that bound (inflating and
 * decoding), and the bytes of each. */
uint64_t debuginfo_reading_ns(uint64_t *inflate_bytes, uint64_t *decode_bytes);

#endif
