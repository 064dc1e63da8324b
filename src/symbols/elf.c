/* Bounds-checked ELF64 reader (see elf.h). */
#include "symbols/elf.h"

#include <linux/elf.h>

#include "rt/rt.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif
#ifndef STT_GNU_IFUNC
#define STT_GNU_IFUNC 10
#endif
#ifndef SHT_GNU_VERSYM
#define SHT_GNU_VERSYM 0x6fffffff
#endif

/* True when [off, off+len) lies inside the image. */
static bool in_image(const struct elf_image *img, uint64_t off, uint64_t len)
{
	return off <= img->size && len <= img->size - off;
}

/* Every caller copies a fixed-size header or entry: an inlined copy of that
 * many bytes, not a call per symbol table entry. */
static inline bool copy_out(const struct elf_image *img, uint64_t off, void *dst, size_t len)
{
	if (!in_image(img, off, len))
		return false;
	__builtin_memcpy(dst, img->data + off, len);
	return true;
}

bool elf_open(struct elf_image *img, const void *data, size_t size)
{
	Elf64_Ehdr eh;
	rt_memset(img, 0, sizeof(*img));
	if (data == NULL || size < sizeof(eh))
		return false;
	img->data = data;
	img->size = size;
	rt_memcpy(&eh, data, sizeof(eh));
	if (eh.e_ident[EI_MAG0] != ELFMAG0 || eh.e_ident[EI_MAG1] != ELFMAG1 ||
	    eh.e_ident[EI_MAG2] != ELFMAG2 || eh.e_ident[EI_MAG3] != ELFMAG3 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return false;
	img->type = eh.e_type;
	img->machine = eh.e_machine;
	img->phoff = eh.e_phoff;
	img->shoff = eh.e_shoff;
	/* Tables whose entry size is not the one we read are ignored. */
	img->phnum = eh.e_phentsize == sizeof(Elf64_Phdr) ? eh.e_phnum : 0;
	img->shnum = eh.e_shentsize == sizeof(Elf64_Shdr) ? eh.e_shnum : 0;
	img->shstrndx = eh.e_shstrndx;
	if (!in_image(img, img->phoff, (uint64_t)img->phnum * sizeof(Elf64_Phdr)))
		img->phnum = 0;
	if (!in_image(img, img->shoff, (uint64_t)img->shnum * sizeof(Elf64_Shdr)))
		img->shnum = 0;
	return true;
}

bool elf_segment_at(const struct elf_image *img, uint32_t i, struct elf_segment *out)
{
	Elf64_Phdr ph;
	if (i >= img->phnum || !copy_out(img, img->phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph)))
		return false;
	out->type = ph.p_type;
	out->flags = ph.p_flags;
	out->offset = ph.p_offset;
	out->vaddr = ph.p_vaddr;
	out->filesz = ph.p_filesz;
	out->memsz = ph.p_memsz;
	out->align = ph.p_align;
	return true;
}

bool elf_section_at(const struct elf_image *img, uint32_t i, struct elf_section *out)
{
	Elf64_Shdr sh;
	if (i >= img->shnum || !copy_out(img, img->shoff + (uint64_t)i * sizeof(sh), &sh, sizeof(sh)))
		return false;
	out->offset = sh.sh_offset;
	out->size = sh.sh_type == SHT_NOBITS ? 0 : sh.sh_size;
	out->addr = sh.sh_addr;
	out->type = sh.sh_type;
	out->link = sh.sh_link;
	out->entsize = sh.sh_entsize;
	out->flags = sh.sh_flags;
	return in_image(img, out->offset, out->size);
}

const char *elf_string_at(const struct elf_image *img, const struct elf_section *strtab,
			  uint64_t off)
{
	if (off >= strtab->size || !in_image(img, strtab->offset, strtab->size))
		return NULL;
	const char *s = (const char *)img->data + strtab->offset + off;
	if (rt_memchr(s, 0, strtab->size - off) == NULL)
		return NULL;
	return s;
}

int elf_strings_find(const struct elf_image *img, const struct elf_section *strtab,
		     const char *const *names, uint32_t n)
{
	if (n == 0 || !in_image(img, strtab->offset, strtab->size))
		return -1;
	/* Lengths of 1..63 asked, as bits: most strings are passed over
	 * after their length alone. */
	uint64_t lengths = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = rt_strlen(names[i]);
		if (len > 0 && len < 64)
			lengths |= 1ull << len;
	}
	const char *base = (const char *)img->data + strtab->offset;
	uint64_t size = strtab->size;
	for (uint64_t at = 0; at < size;) {
		const char *s = base + at;
		const char *end = rt_memchr(s, 0, size - at);
		if (end == NULL)
			break;
		uint64_t len = (uint64_t)(end - s);
		if (len < 64 && (lengths >> len & 1u))
			for (uint32_t i = 0; i < n; i++)
				if (rt_strlen(names[i]) == len && rt_memcmp(names[i], s, len) == 0)
					return (int)i;
		at += len + 1;
	}
	return -1;
}

static bool section_name_at(const struct elf_image *img, const struct elf_section *shstr,
			    uint32_t i, const char **name, struct elf_section *sec)
{
	Elf64_Shdr sh;
	if (!elf_section_at(img, i, sec) ||
	    !copy_out(img, img->shoff + (uint64_t)i * sizeof(sh), &sh, sizeof(sh)))
		return false;
	*name = elf_string_at(img, shstr, sh.sh_name);
	return *name != NULL;
}

bool elf_section_by_name(const struct elf_image *img, const char *name, struct elf_section *out)
{
	struct elf_section shstr;
	if (!elf_section_at(img, img->shstrndx, &shstr) || shstr.type != SHT_STRTAB)
		return false;
	for (uint32_t i = 1; i < img->shnum; i++) {
		const char *n;
		if (section_name_at(img, &shstr, i, &n, out) && rt_streq(n, name))
			return true;
	}
	return false;
}

/* Scans notes in file bytes [off, off+len) for NT_GNU_BUILD_ID. */
static bool build_id_in_notes(const struct elf_image *img, uint64_t off, uint64_t len, char *hex,
			      size_t cap)
{
	static const char digits[] = "0123456789abcdef";
	if (!in_image(img, off, len))
		return false;
	uint64_t end = off + len;
	/* Each note takes at least 12 bytes, so this bounds the loop. */
	while (off + sizeof(Elf64_Nhdr) <= end) {
		Elf64_Nhdr nh;
		rt_memcpy(&nh, img->data + off, sizeof(nh));
		uint64_t name_off = off + sizeof(nh);
		uint64_t desc_off = name_off + (((uint64_t)nh.n_namesz + 3) & ~(uint64_t)3);
		uint64_t next = desc_off + (((uint64_t)nh.n_descsz + 3) & ~(uint64_t)3);
		if (desc_off > end || nh.n_descsz > end - desc_off)
			return false;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    rt_memcmp(img->data + name_off, "GNU", 4) == 0 && nh.n_descsz > 0 &&
		    nh.n_descsz <= ELF_BUILD_ID_MAX && cap > 2 * (size_t)nh.n_descsz) {
			for (uint32_t i = 0; i < nh.n_descsz; i++) {
				uint8_t b = img->data[desc_off + i];
				hex[2 * i] = digits[b >> 4];
				hex[2 * i + 1] = digits[b & 15];
			}
			hex[2 * nh.n_descsz] = 0;
			return true;
		}
		off = next;
	}
	return false;
}

bool elf_build_id_hex(const struct elf_image *img, char *hex, size_t cap)
{
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		if (elf_segment_at(img, i, &seg) && seg.type == PT_NOTE &&
		    build_id_in_notes(img, seg.offset, seg.filesz, hex, cap))
			return true;
	}
	for (uint32_t i = 1; i < img->shnum; i++) {
		struct elf_section sec;
		if (elf_section_at(img, i, &sec) && sec.type == SHT_NOTE &&
		    build_id_in_notes(img, sec.offset, sec.size, hex, cap))
			return true;
	}
	return false;
}

bool elf_load_range(const struct elf_image *img, uint64_t *lo, uint64_t *hi)
{
	bool found = false;
	*lo = UINT64_MAX;
	*hi = 0;
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		if (!elf_segment_at(img, i, &seg) || seg.type != PT_LOAD)
			continue;
		if (seg.memsz > UINT64_MAX - seg.vaddr)
			continue;
		found = true;
		*lo = RT_MIN(*lo, seg.vaddr & ~(uint64_t)4095);
		*hi = RT_MAX(*hi, seg.vaddr + seg.memsz);
	}
	return found;
}

uint32_t elf_load_segments(const struct elf_image *img, struct elf_load_segment *out, uint32_t cap)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		if (!elf_segment_at(img, i, &seg) || seg.type != PT_LOAD ||
		    seg.filesz > UINT64_MAX - seg.offset)
			continue;
		if (n < cap)
			out[n] = (struct elf_load_segment){seg.offset, seg.vaddr, seg.filesz, seg.flags};
		n++;
	}
	return n;
}

/* Largest page size a loader rounds segment offsets to (arm64 64 KiB pages). */
#define LOAD_PAGE_MAX 65536u

static bool segment_fits_prot(const struct elf_load_segment *s, uint32_t map_pf)
{
	if ((s->flags & PF_X) != (map_pf & PF_X))
		return false;
	return !(map_pf & PF_W) || (s->flags & PF_W);
}

bool elf_bias_of_mapping(const struct elf_load_segment *segs, uint32_t n, uint64_t map_start,
			 uint64_t map_offset, uint32_t map_pf, uint64_t *bias)
{
	/* Pass 0: a segment mapped from exactly this page, permissions agreeing;
	 * pass 1: a segment containing the offset, permissions agreeing;
	 * pass 2: a segment containing the offset. */
	for (int pass = 0; pass < 3; pass++) {
		for (uint32_t i = 0; i < n; i++) {
			const struct elf_load_segment *s = &segs[i];
			bool ok;
			if (pass == 0)
				ok = (map_offset & 4095) == 0 && map_offset <= s->offset &&
				     s->offset - map_offset < LOAD_PAGE_MAX &&
				     ((s->vaddr - s->offset) & 4095) == 0 && segment_fits_prot(s, map_pf);
			else
				ok = map_offset >= (s->offset & ~(uint64_t)4095) &&
				     map_offset < s->offset + s->filesz &&
				     (pass == 2 || segment_fits_prot(s, map_pf));
			if (!ok)
				continue;
			/* The mapping's first byte is file byte map_offset, link address
			 * p_vaddr - (p_offset - map_offset). */
			*bias = map_start - (s->vaddr - s->offset + map_offset);
			return true;
		}
	}
	return false;
}

bool elf_load_bias(const struct elf_image *img, uint64_t map_start, uint64_t map_offset,
		   uint32_t map_pf, uint64_t *bias)
{
	struct elf_load_segment segs[32];
	uint32_t n = elf_load_segments(img, segs, RT_ARRAY_LEN(segs));
	return elf_bias_of_mapping(segs, RT_MIN(n, (uint32_t)RT_ARRAY_LEN(segs)), map_start,
				   map_offset, map_pf, bias);
}

bool elf_vaddr_to_offset(const struct elf_image *img, uint64_t vaddr, uint64_t *offset)
{
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		if (!elf_segment_at(img, i, &seg) || seg.type != PT_LOAD)
			continue;
		if (vaddr >= seg.vaddr && vaddr - seg.vaddr < seg.filesz) {
			*offset = seg.offset + (vaddr - seg.vaddr);
			return *offset >= seg.offset && *offset < img->size;
		}
	}
	return false;
}

bool elf_eh_frame(const struct elf_image *img, struct elf_section *out)
{
	if (elf_section_by_name(img, ".eh_frame", out) && out->size > 0)
		return true;
	/* No section headers (stripped in memory, some vDSOs): .eh_frame_hdr has
	 * version 1, eh_frame_ptr encoding, then the pointer. */
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		uint8_t hdr[8];
		if (!elf_segment_at(img, i, &seg) || seg.type != PT_GNU_EH_FRAME ||
		    !copy_out(img, seg.offset, hdr, sizeof(hdr)) || hdr[0] != 1)
			continue;
		int32_t rel;
		uint64_t ptr;
		rt_memcpy(&rel, hdr + 4, sizeof(rel));
		if (hdr[1] == 0x1b) /* DW_EH_PE_pcrel | DW_EH_PE_sdata4 */
			ptr = seg.vaddr + 4 + (uint64_t)(int64_t)rel;
		else if (hdr[1] == 0x03) /* DW_EH_PE_udata4 */
			ptr = (uint32_t)rel;
		else
			continue;
		uint64_t off;
		if (!elf_vaddr_to_offset(img, ptr, &off))
			continue;
		out->offset = off;
		out->addr = ptr;
		out->size = img->size - off; /* the parser stops at the zero terminator */
		out->type = 0;
		out->link = 0;
		out->entsize = 0;
		return true;
	}
	return false;
}

bool elf_eh_frame_hdr(const struct elf_image *img, struct elf_section *out)
{
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		if (!elf_segment_at(img, i, &seg) || seg.type != PT_GNU_EH_FRAME || seg.filesz == 0 ||
		    seg.offset > img->size || seg.filesz > img->size - seg.offset)
			continue;
		rt_memset(out, 0, sizeof(*out));
		out->offset = seg.offset;
		out->size = seg.filesz;
		out->addr = seg.vaddr;
		return true;
	}
	return false;
}

bool elf_symbols_begin(const struct elf_image *img, uint32_t symtab_type,
		       struct elf_symbol_iter *it)
{
	rt_memset(it, 0, sizeof(*it));
	it->img = img;
	for (uint32_t i = 1; i < img->shnum; i++) {
		if (!elf_section_at(img, i, &it->symtab) || it->symtab.type != symtab_type)
			continue;
		if (!elf_section_at(img, it->symtab.link, &it->strtab) ||
		    it->strtab.type != SHT_STRTAB)
			return false;
		it->count = it->symtab.size / sizeof(Elf64_Sym);
		it->next = 1;
		/* Symbol versions (.gnu.version) parallel .dynsym. */
		for (uint32_t j = 1; symtab_type == SHT_DYNSYM && j < img->shnum; j++) {
			struct elf_section v;
			if (elf_section_at(img, j, &v) && v.type == SHT_GNU_VERSYM && v.link == i &&
			    v.size / 2 >= it->count) {
				it->versym = v;
				break;
			}
		}
		return true;
	}
	return false;
}

/* Whether entry `sym` is a defined function, and if so *out without its name. */
static inline bool function_symbol(const struct elf_symbol_iter *it, uint64_t index,
				   const Elf64_Sym *sym, struct elf_symbol *out)
{
	uint8_t type = ELF64_ST_TYPE(sym->st_info);
	if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym->st_shndx == SHN_UNDEF ||
	    sym->st_value == 0)
		return false;
	out->value = sym->st_value;
	out->size = sym->st_size;
	out->name = NULL;
	out->bind = ELF64_ST_BIND(sym->st_info);
	out->hidden_version = false;
	out->index = index;
	out->name_offset = sym->st_name;
	uint16_t ver;
	if (it->versym.size > 0 && copy_out(it->img, it->versym.offset + index * 2, &ver, sizeof(ver)))
		out->hidden_version = (ver & 0x8000) != 0;
	return true;
}

/* Symbol `index` of the iterator's table: 1 a defined, named function, 0
 * something else, -1 outside the image. */
static int read_symbol(const struct elf_symbol_iter *it, uint64_t index, struct elf_symbol *out)
{
	Elf64_Sym sym;
	if (index >= it->count ||
	    !copy_out(it->img, it->symtab.offset + index * sizeof(sym), &sym, sizeof(sym)))
		return -1;
	if (!function_symbol(it, index, &sym, out))
		return 0;
	const char *name = elf_string_at(it->img, &it->strtab, sym.st_name);
	if (name == NULL || name[0] == 0)
		return 0;
	out->name = name;
	return 1;
}

bool elf_symbols_next(struct elf_symbol_iter *it, struct elf_symbol *out)
{
	if (!it->without_names) {
		while (it->next < it->count) {
			int r = read_symbol(it, it->next++, out);
			if (r != 0)
				return r > 0;
		}
		return false;
	}
	/* Without names, the loop every function table is built by: the
	 * table's bounds are checked once here, not per entry. */
	if (it->count > it->symtab.size / sizeof(Elf64_Sym) ||
	    !in_image(it->img, it->symtab.offset, it->symtab.size))
		return false;
	const uint8_t *table = it->img->data + it->symtab.offset;
	while (it->next < it->count) {
		uint64_t index = it->next++;
		Elf64_Sym sym;
		__builtin_memcpy(&sym, table + index * sizeof(sym), sizeof(sym));
		if (function_symbol(it, index, &sym, out) && sym.st_name != 0)
			return true;
	}
	return false;
}

bool elf_symbol_at(const struct elf_symbol_iter *it, uint64_t index, struct elf_symbol *out)
{
	return index > 0 && read_symbol(it, index, out) > 0;
}
