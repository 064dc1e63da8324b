/* Shared between the files of the DWARF reader (not a public contract). */
#ifndef STOWAWAY_DWARF_INTERNAL_H
#define STOWAWAY_DWARF_INTERNAL_H

#include <stdbool.h>

#include "dwarf/sections.h"
#include "rt/cursor.h"

/* Forms (DWARF 5, section 7.5.6, plus the GNU extensions). */
enum {
	DW_FORM_addr = 0x01, DW_FORM_block2 = 0x03, DW_FORM_block4 = 0x04, DW_FORM_data2 = 0x05,
	DW_FORM_data4 = 0x06, DW_FORM_data8 = 0x07, DW_FORM_string = 0x08, DW_FORM_block = 0x09,
	DW_FORM_block1 = 0x0a, DW_FORM_data1 = 0x0b, DW_FORM_flag = 0x0c, DW_FORM_sdata = 0x0d,
	DW_FORM_strp = 0x0e, DW_FORM_udata = 0x0f, DW_FORM_ref_addr = 0x10, DW_FORM_ref1 = 0x11,
	DW_FORM_ref2 = 0x12, DW_FORM_ref4 = 0x13, DW_FORM_ref8 = 0x14, DW_FORM_ref_udata = 0x15,
	DW_FORM_indirect = 0x16, DW_FORM_sec_offset = 0x17, DW_FORM_exprloc = 0x18,
	DW_FORM_flag_present = 0x19, DW_FORM_strx = 0x1a, DW_FORM_addrx = 0x1b,
	DW_FORM_ref_sup4 = 0x1c, DW_FORM_strp_sup = 0x1d, DW_FORM_data16 = 0x1e,
	DW_FORM_line_strp = 0x1f, DW_FORM_ref_sig8 = 0x20, DW_FORM_implicit_const = 0x21,
	DW_FORM_loclistx = 0x22, DW_FORM_rnglistx = 0x23, DW_FORM_ref_sup8 = 0x24,
	DW_FORM_strx1 = 0x25, DW_FORM_strx2 = 0x26, DW_FORM_strx3 = 0x27, DW_FORM_strx4 = 0x28,
	DW_FORM_addrx1 = 0x29, DW_FORM_addrx2 = 0x2a, DW_FORM_addrx3 = 0x2b, DW_FORM_addrx4 = 0x2c,
	DW_FORM_GNU_addr_index = 0x1f01, DW_FORM_GNU_str_index = 0x1f02,
	DW_FORM_GNU_ref_alt = 0x1f20, DW_FORM_GNU_strp_alt = 0x1f21,
};

/* What an attribute value is, once read. */
enum dw_val_kind {
	DV_NONE,
	DV_ADDR,      /* u: address */
	DV_ADDRX,     /* u: index into .debug_addr */
	DV_CONST,     /* u: unsigned constant (sdata stored two's complement) */
	DV_STR,       /* s: string */
	DV_STRP,      /* u: offset into .debug_str */
	DV_LINE_STRP, /* u: offset into .debug_line_str */
	DV_STRX,      /* u: index into .debug_str_offsets */
	DV_REF,       /* u: .debug_info offset */
	DV_SECOFF,    /* u: offset into another section */
	DV_RNGLISTX,  /* u: index into the unit's range list offsets */
	DV_OTHER,     /* present, nothing we use (blocks, flags, signatures) */
};

struct dw_val {
	uint8_t kind;
	uint64_t u;
	const char *s;
};

/* What reading a value needs to know about its unit. */
struct dw_unit_ctx {
	uint64_t offset; /* of the unit header in .debug_info */
	uint8_t version, addr_size, offset_size;
	uint64_t str_offsets_base, addr_base, rnglists_base;
	bool has_str_offsets_base, has_addr_base, has_rnglists_base;
};

/* Reads one value of `form` (DW_FORM_indirect followed, once). */
bool dw_read_form(struct dw_cursor *c, const struct dw_unit_ctx *u, uint64_t form,
		  int64_t implicit_const, struct dw_val *v);
/* The string a value names, or NULL. */
const char *dw_val_string(const struct dwarf_sections *s, const struct dw_unit_ctx *u,
			  const struct dw_val *v);

/* One decoded line table. */
struct dw_line_row {
	uint64_t addr;
	uint32_t file, line;
};
struct dw_line_seq {
	uint64_t lo, hi; /* [lo, hi) */
	uint32_t first, count;
};
struct dw_line_file {
	const char *dir;  /* NULL: none (name is absolute or relative to comp_dir) */
	const char *name; /* NULL: the entry is unusable */
};
struct dw_line_table {
	struct dw_line_row *rows;
	struct dw_line_seq *seqs;
	struct dw_line_file *files; /* by the file number the program and DW_AT_call_file use */
	uint32_t nrows, nseqs, nfiles;
	size_t bytes;      /* memory held */
	bool over_budget;  /* decoding stopped at max_bytes */
};

/* Decodes the line program at `offset` of .debug_line for unit u.  comp_dir
 * stands for directory 0 in DWARF 4 and earlier.  Fails (and holds nothing)
 * on malformed input or when its memory would pass max_bytes. */
bool dw_line_decode(const struct dwarf_sections *s, const struct dw_unit_ctx *u, uint64_t offset,
		    const char *comp_dir, size_t max_bytes, struct dw_line_table *t);
void dw_line_free(struct dw_line_table *t);
/* The row covering addr: false if none. */
bool dw_line_find(const struct dw_line_table *t, uint64_t addr, uint32_t *file, uint32_t *line);

#endif
