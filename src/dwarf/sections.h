/* The DWARF sections of one file, as the reader takes them. */
#ifndef STOWAWAY_DWARF_SECTIONS_H
#define STOWAWAY_DWARF_SECTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

/* The sections that may be produced on demand (see dwarf_sections.load). */
enum dwarf_section_id { DWARF_SEC_INFO, DWARF_SEC_ABBREV, DWARF_SEC_LINE };

/* Section bytes as the image holds them (already decompressed).  Absent
 * sections have data NULL and size 0.  The bytes must outlive the index.
 *
 * load, when not NULL, makes bytes [off, off + len) of .debug_info,
 * .debug_abbrev or .debug_line readable; the reader calls it before reading
 * any of those bytes, and bytes once loaded stay readable and unchanged for
 * the index's life.  It returns false when they cannot be (memory bound
 * reached, corrupt data).  With load set and .debug_aranges present, the
 * unit table comes from .debug_aranges, so .debug_info is read only for the
 * units lookups land in. */
struct dwarf_sections {
	const uint8_t *info, *abbrev, *line, *str, *line_str, *str_offsets, *addr, *ranges,
		*rnglists, *aranges;
	size_t info_size, abbrev_size, line_size, str_size, line_str_size, str_offsets_size,
		addr_size, ranges_size, rnglists_size, aranges_size;
	bool (*load)(void *ctx, enum dwarf_section_id which, uint64_t off, uint64_t len);
	void *load_ctx;
};

#endif
