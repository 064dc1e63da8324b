/* Unwind rules from .eh_frame (the rules of the architecture we are built
 * for: DWARF register numbers from rt/arch.h), as compact rows: each row
 * gives, from its pc up to the next row's pc, how to find the caller's frame.
 *
 * The unwinder looks rows up in place (cfi_index, below): one FDE found by
 * binary search and its programs run up to the pc, nothing built ahead.
 * cfi_table_build() parses every CIE/FDE of an .eh_frame image into one
 * sorted array of rows: the whole-image reference the lookups are tested
 * against (tests, the .eh_frame fuzzer).  Every read of the .eh_frame bytes
 * is bounds-checked, so a corrupted image yields fewer rows, never a bad
 * read.
 */
#ifndef STOWAWAY_UNWIND_CFI_H
#define STOWAWAY_UNWIND_CFI_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rt/arch.h"

enum cfi_kind {
	CFI_NONE = 0,        /* no FDE covers this pc */
	CFI_NORMAL = 1,      /* CFA = reg + cfa_offset; RA at CFA + ra_offset */
	CFI_OUTERMOST = 2,   /* return address undefined: the thread's first frame */
	CFI_UNSUPPORTED = 3, /* rule we do not model (expressions, other registers) */
	CFI_PLT = 4,         /* x86_64 lazy PLT stub: CFA = rsp + cfa_offset + (pc&15 >= plt_threshold ? 8 : 0) */
	CFI_SIGNAL = 5,      /* 'S' augmentation: a signal trampoline, ucontext at sp */
};

/* DWARF register numbers: stack pointer, frame pointer (rbp, x29), and the
 * return address column (x86_64's pseudo-register 16, aarch64's x30). */
#define CFI_REG_SP ARCH_CFI_REG_SP
#define CFI_REG_FP ARCH_CFI_REG_FP
#define CFI_REG_RA ARCH_CFI_REG_RA

/* ra_offset marker: the return address is still in the link register
 * (aarch64 before a function saves x30, and in leaf functions). */
#define CFI_RA_IN_LINK_REGISTER 0

/* Saved frame pointer marker: the caller's equals ours. */
#define CFI_FP_SAME 0
/* Saved frame pointer marker: the caller's cannot be recovered. */
#define CFI_FP_UNKNOWN INT16_MIN

struct cfi_row {
	uint32_t pc;        /* link-time address minus the table's base */
	int32_t cfa_offset;
	uint8_t kind;       /* enum cfi_kind */
	uint8_t cfa_reg;    /* CFI_REG_SP or CFI_REG_FP */
	int8_t ra_offset;   /* return address at CFA + ra_offset, or CFI_RA_IN_LINK_REGISTER */
	uint8_t plt_threshold;
	int16_t fp_offset;  /* caller's frame pointer at CFA + fp_offset, or CFI_FP_SAME / CFI_FP_UNKNOWN */
	uint16_t reserved;
};

/* Lookups first go through a page index (rows of one 4 KiB page of code are
 * contiguous) so a lookup in a cold cache touches two or three pages, not a
 * whole binary search's worth. */
#define CFI_PAGE_SHIFT 12
struct cfi_table {
	uint64_t base;  /* link-time address of pc == 0 */
	uint64_t limit; /* rows cover link-time [base, base + limit) at most */
	uint32_t nrows;
	uint32_t npages; /* page_first has npages + 1 entries */
	/* page_first[p] = number of rows whose pc lies below page p. */
	const uint32_t *page_first;
	struct cfi_row rows[];
};

/* Builds the table for .eh_frame bytes `data[0..size)` loaded at link-time
 * address `eh_addr`, for code in link-time [base, base + limit) (FDEs outside
 * are dropped; limit <= 4 GiB).  Returns NULL if nothing usable was found or
 * memory ran out.  Free with cfi_table_free(). */
struct cfi_table *cfi_table_build(const uint8_t *data, size_t size, uint64_t eh_addr,
				  uint64_t base, uint64_t limit);
void cfi_table_free(struct cfi_table *t);

/* The row covering link-time address `pc`, or NULL (kind CFI_NONE rows are
 * returned as NULL too). [signal-safe] */
const struct cfi_row *cfi_table_lookup(const struct cfi_table *t, uint64_t pc);

/* ---- rules looked up where they are ----
 *
 * A module's unwind rules without building rows: a sorted search table of
 * its FDEs (the linker's .eh_frame_hdr table, read in place, or one built
 * here when a module has none) and its .eh_frame bytes, read in place.  A
 * lookup binary-searches the table, parses one FDE and its CIE and runs their
 * programs up to the address: the same row cfi_table_build() would give,
 * with no allocation, so it serves the signal handler directly.  Both byte
 * ranges must stay mapped and readable while lookups may run.
 */
#define CFI_READ_WORDS 4u
struct cfi_index {
	const uint8_t *eh_frame; /* .eh_frame bytes */
	uint64_t eh_frame_size;
	uint64_t eh_frame_addr; /* link-time address of eh_frame[0] */
	/* count entries of two little-endian int32, sorted by the first: an
	 * FDE's first pc is pc_base + first, its entry at fde_base + second. */
	const uint8_t *table;
	uint32_t count;
	uint64_t pc_base, fde_base;
	size_t owned_bytes; /* heap bytes of a table built here, 0 for .eh_frame_hdr's */
	/* Where lookups read, so that the owner can bound the file pages they
	 * keep resident and give them back (cfi_index_read_bytes): one bit per
	 * window of 2^read_shift bytes (at least 64 KiB, the kernel's unit of
	 * mapping file pages around a fault) of the addresses from read_base
	 * that hold .eh_frame and, unless built here, the table. */
	uint64_t read_base;
	uint32_t read_shift;
	_Atomic uint64_t read_windows[CFI_READ_WORDS];
};

/* Uses the .eh_frame_hdr bytes hdr[0..hdr_size) (link-time address hdr_addr)
 * and the .eh_frame they point to (eh_frame_addr, which the header must name).
 * False when the header has no binary-search table in the datarel sdata4
 * encoding linkers write.  Keeps pointers into both; allocates nothing. */
bool cfi_index_from_hdr(struct cfi_index *ix, const uint8_t *hdr, size_t hdr_size,
			uint64_t hdr_addr, const uint8_t *eh_frame, uint64_t eh_frame_size,
			uint64_t eh_frame_addr);

/* Builds the search table (8 bytes per FDE) from the .eh_frame bytes, for a
 * module without a usable .eh_frame_hdr; FDEs outside link-time
 * [base, base + limit) are dropped (limit < 2 GiB).  False if none or out of
 * memory.  Keeps a pointer to eh_frame.  Free with cfi_index_free(). */
bool cfi_index_build(struct cfi_index *ix, const uint8_t *eh_frame, uint64_t eh_frame_size,
		     uint64_t eh_frame_addr, uint64_t base, uint64_t limit);
void cfi_index_free(struct cfi_index *ix);

/* The row covering link-time address `pc` into *out (its pc field 0); false
 * if no FDE covers pc or its rule there is CFI_NONE.  [signal-safe] */
bool cfi_index_lookup(struct cfi_index *ix, uint64_t pc, struct cfi_row *out);
/* cfi_index_lookup, and the span [*lo, *hi) of link-time addresses around
 * pc that share its row (or its lack of one); [pc, pc + 1) when not known.
 * [signal-safe] */
bool cfi_index_lookup_span(struct cfi_index *ix, uint64_t pc, struct cfi_row *out, uint64_t *lo,
			   uint64_t *hi);

/* The link-time start of the FDE (the function) covering `pc`; false if
 * none does.  [signal-safe] */
bool cfi_index_function_start(struct cfi_index *ix, uint64_t pc, uint64_t *start);

/* An upper bound of the bytes of ix's tables that lookups made resident
 * since the last cfi_index_forget_reads: the windows they read in, whole. */
uint64_t cfi_index_read_bytes(const struct cfi_index *ix);
/* Starts counting anew; call before giving back the pages, so a lookup
 * running meanwhile counts again. */
void cfi_index_forget_reads(struct cfi_index *ix);

#endif
