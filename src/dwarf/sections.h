/* The DWARF sections of one file, as the reader takes them. */
#ifndef STOWAWAY_DWARF_SECTIONS_H
#define STOWAWAY_DWARF_SECTIONS_H

#include <stddef.h>
#include <stdint.h>

/* Section bytes as the image holds them (already decompressed).  Absent
 * sections have data NULL and size 0.  The bytes must outlive the index. */
struct dwarf_sections {
	const uint8_t *info, *abbrev, *line, *str, *line_str, *str_offsets, *addr, *ranges,
		*rnglists;
	size_t info_size, abbrev_size, line_size, str_size, line_str_size, str_offsets_size,
		addr_size, ranges_size, rnglists_size;
};

#endif
