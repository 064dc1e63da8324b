/* Source lines and inlined frames from DWARF (versions 2 to 5): the line
 * number programs of .debug_line, the subprogram and inlined-subroutine
 * scopes of .debug_info/.debug_abbrev with their address ranges
 * (.debug_ranges, .debug_rnglists), and the string and address tables they
 * refer to.  Split DWARF (.dwo) and type units are not read.
 *
 * An index is built lazily: creating one reads only the unit headers and
 * each compile unit's root entry (a sorted table of unit address ranges),
 * or, for sections produced on demand (dwarf_sections.load), only
 * .debug_aranges, a unit's header and root being read at its first lookup;
 * the first lookup in a unit decodes that unit's line table and scope tree
 * into a cache, evicted least-recently-used when the memory budget would be
 * exceeded.  Everything is bounds-checked against the section sizes, so
 * malformed input gives "nothing known", never a bad read; loops are
 * bounded and trees are walked with an explicit stack.
 *
 * Not for signal handlers (it allocates).  One thread at a time per index.
 */
#ifndef STOWAWAY_DWARF_DWARF_H
#define STOWAWAY_DWARF_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwarf/sections.h"


/* One frame at an address.  Strings live as long as the index. */
struct dwarf_frame {
	const char *name;    /* linkage (mangled) name if the entry has one, else its name; NULL: none */
	const char *file;    /* source file, directory-qualified when the table says so; NULL: unknown */
	uint32_t line;       /* 0: unknown */
};

/* Most frames one lookup reports (deeper inline chains keep the innermost). */
#define DWARF_MAX_FRAMES 32

struct dwarf_index;

/* Creates an index over s (NULL if there is no .debug_info, no unit, or memory
 * runs out).  budget: bytes the index may hold, tables and caches together;
 * the unit table itself must fit in it. */
struct dwarf_index *dwarf_index_new(const struct dwarf_sections *s, size_t budget);
void dwarf_index_free(struct dwarf_index *ix);

enum dwarf_lookup_status {
	DWARF_FOUND = 0,     /* frames filled */
	DWARF_NOT_FOUND = 1, /* no unit covers the address, or it has no line for it */
	DWARF_OVER_BUDGET = 2, /* the unit would not fit the budget even alone */
	DWARF_DEFERRED = 3,    /* not read now (its caller's CPU share is used up); a later lookup may */
};

/* Frames at link-time address addr, innermost first: frames[0] is the code at
 * addr (its line from the line table), frames[k+1] the function frames[k] was
 * inlined into (its line is the call site), the last one the subprogram.
 * *n receives the count (at least 1 when DWARF_FOUND). */
enum dwarf_lookup_status dwarf_lookup(struct dwarf_index *ix, uint64_t addr,
				      struct dwarf_frame frames[DWARF_MAX_FRAMES], uint32_t *n);
/* The .debug_info offset of the unit covering addr, without reading it;
 * false if no unit does. */
bool dwarf_unit_offset(struct dwarf_index *ix, uint64_t addr, uint64_t *info_offset);

/* The bytes of .debug_info a lookup of addr would decode first: the size
 * of the unit covering it if that unit is not decoded yet (nor known to be
 * over the budget or broken), else 0.  Reads nothing. */
uint64_t dwarf_decode_pending(struct dwarf_index *ix, uint64_t addr);

/* Bytes the index holds now, and its peak since creation. */
size_t dwarf_index_bytes(const struct dwarf_index *ix);
size_t dwarf_index_peak_bytes(const struct dwarf_index *ix);

#endif
