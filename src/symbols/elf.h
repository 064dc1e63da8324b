/* A bounds-checked reader for ELF64 images held in memory (a file mapped
 * read-only, or the vDSO).  Every offset and size taken from the image is
 * checked against the image size before use, so a corrupted or truncated
 * file yields "not found" instead of a bad read.  Fields are copied out with
 * memcpy, so the image needs no particular alignment.
 *
 * Nothing here allocates; all functions are signal-safe (but they are meant
 * for the refresh path, not for signal handlers).
 */
#ifndef STOWAWAY_SYMBOLS_ELF_H
#define STOWAWAY_SYMBOLS_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest build id we keep (bytes); the hex form needs twice that plus 1. */
#define ELF_BUILD_ID_MAX 64
#define ELF_BUILD_ID_HEX_CAP (2 * ELF_BUILD_ID_MAX + 1)

struct elf_image {
	const uint8_t *data;
	size_t size;
	uint16_t type;    /* ET_EXEC, ET_DYN, ... */
	uint16_t machine; /* EM_X86_64, EM_AARCH64 */
	uint64_t phoff, shoff;
	uint16_t phnum, shnum, shstrndx;
};

/* A section or segment extent, checked to lie inside the image (file bytes). */
struct elf_section {
	uint64_t offset; /* file offset of the bytes */
	uint64_t size;   /* bytes present in the image */
	uint64_t addr;   /* link-time virtual address */
	uint32_t type;
	uint32_t link;
	uint64_t entsize;
	uint64_t flags; /* SHF_* */
};

struct elf_segment {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

/* Validates the ELF64 little-endian header of data[0..size). */
bool elf_open(struct elf_image *img, const void *data, size_t size);

/* Program header i (0 <= i < phnum); false if it does not fit the image. */
bool elf_segment_at(const struct elf_image *img, uint32_t i, struct elf_segment *out);
/* Section header i; false if it does not fit or its bytes are outside the image
 * (SHT_NOBITS sections report size 0). */
bool elf_section_at(const struct elf_image *img, uint32_t i, struct elf_section *out);
/* First section whose name equals `name`. */
bool elf_section_by_name(const struct elf_image *img, const char *name, struct elf_section *out);

/* The GNU build id as lowercase hex into hex[ELF_BUILD_ID_HEX_CAP]; false if
 * absent.  Looks in PT_NOTE segments, then SHT_NOTE sections. */
bool elf_build_id_hex(const struct elf_image *img, char *hex, size_t cap);

/* Lowest page-aligned PT_LOAD vaddr and the end of the highest PT_LOAD (memsz);
 * false if there is no PT_LOAD. */
bool elf_load_range(const struct elf_image *img, uint64_t *lo, uint64_t *hi);

/* A PT_LOAD segment as the dynamic loader maps it (file bytes only). */
struct elf_load_segment {
	uint64_t offset, vaddr, filesz;
	uint32_t flags; /* PF_R | PF_W | PF_X */
};

/* Copies up to `cap` PT_LOAD segments of img into out; returns how many
 * there are (may exceed cap: only the first cap are written). */
uint32_t elf_load_segments(const struct elf_image *img, struct elf_load_segment *out, uint32_t cap);

/* Load bias (runtime address = link vaddr + bias) of a mapping that starts at
 * `map_start`, maps the file from `map_offset`, with permissions `map_pf`
 * (PF_R | PF_W | PF_X of the mapping as /proc/self/maps shows it).  The
 * loader maps each PT_LOAD from its p_offset rounded down to a page (4 KiB
 * to 64 KiB) at p_vaddr rounded down likewise, plus one bias for the whole
 * object; any p_vaddr/p_offset relation is allowed (GNU ld, gold, lld, mold,
 * huge-page-aligned and prelinked layouts), and one file page may belong to
 * two segments (lld puts the start of the text segment on the page of the
 * read-only one), so the segment is chosen by offset and executability (and
 * writability when the mapping is writable; RELRO turns RW read-only).
 * Falls back to the segment containing map_offset (a mapping split later by
 * mprotect or munmap).  Executable mappings are placed exactly; a data
 * mapping of a layout where two data segments share a file page (lld's RW
 * and RELRO segments) cannot be told apart from the mapping alone: place
 * such an object by the bias of its executable mapping. */
bool elf_bias_of_mapping(const struct elf_load_segment *segs, uint32_t n, uint64_t map_start,
			 uint64_t map_offset, uint32_t map_pf, uint64_t *bias);

/* elf_bias_of_mapping over img's PT_LOAD segments. */
bool elf_load_bias(const struct elf_image *img, uint64_t map_start, uint64_t map_offset,
		   uint32_t map_pf, uint64_t *bias);

/* Translate a link-time vaddr into a file offset through PT_LOAD (file bytes only). */
bool elf_vaddr_to_offset(const struct elf_image *img, uint64_t vaddr, uint64_t *offset);

/* The .eh_frame bytes and their link-time address: the .eh_frame section if
 * section headers exist, otherwise through PT_GNU_EH_FRAME's eh_frame_ptr. */
bool elf_eh_frame(const struct elf_image *img, struct elf_section *out);

/* The .eh_frame_hdr bytes (PT_GNU_EH_FRAME) and their link-time address. */
bool elf_eh_frame_hdr(const struct elf_image *img, struct elf_section *out);

/* One function symbol. */
struct elf_symbol {
	uint64_t value; /* link-time address */
	uint64_t size;
	const char *name; /* points into the image, terminated inside it */
	uint8_t bind;     /* STB_* */
	bool hidden_version; /* .dynsym: a non-default version (cfree@GLIBC_2.2.5, not @@) */
	uint64_t index;      /* in its symbol table */
	uint32_t name_offset; /* of the name in the table's string table (st_name) */
};

/* Iterates the defined function symbols (STT_FUNC, STT_GNU_IFUNC) of one
 * symbol table section (SHT_SYMTAB or SHT_DYNSYM), skipping malformed entries.
 * With without_names set (after begin), names are not read (name NULL,
 * name_offset set): the string table is not touched, and a symbol with an
 * empty name may be reported, to be read later with elf_symbol_at or
 * elf_string_at. */
struct elf_symbol_iter {
	const struct elf_image *img;
	struct elf_section symtab, strtab;
	struct elf_section versym; /* size 0: none */
	uint64_t next, count;
	bool without_names;
};
bool elf_symbols_begin(const struct elf_image *img, uint32_t symtab_type,
		       struct elf_symbol_iter *it);
bool elf_symbols_next(struct elf_symbol_iter *it, struct elf_symbol *out);
/* Symbol `index` of the iterator's table with its name and version; false
 * unless it is a defined, named function. */
bool elf_symbol_at(const struct elf_symbol_iter *it, uint64_t index, struct elf_symbol *out);

/* A NUL-terminated string at offset `off` of section `strtab`, or NULL. */
const char *elf_string_at(const struct elf_image *img, const struct elf_section *strtab,
			  uint64_t off);

/* Which of names[0..n) is a whole string of section `strtab`: the index of
 * the one found first in the table, or -1 (none, or a malformed section).
 * One pass over the section, each string compared only with the names of
 * its length; an unterminated tail is not a string. */
int elf_strings_find(const struct elf_image *img, const struct elf_section *strtab,
		     const char *const *names, uint32_t n);

#endif
