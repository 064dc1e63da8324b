/* Data symbols for naming addresses (see data_symbols.h). */
#include "symbols/data_symbols.h"

#include <linux/elf.h>

#include "rt/sys.h"
#include "rt/search.h"
#include "symbols/elf.h"
#include "symbols/maps.h"

#define INDEX_MAX_SYMBOLS (1u << 22)
#define WRITABLE_RANGES 8u

static void index_grow(struct data_symbol_index *idx)
{
	uint32_t cap = idx->cap ? idx->cap * 2u : 1024u;
	struct data_symbol *s = rt_realloc(idx->syms, (size_t)cap * sizeof(*s));
	if (!s) {
		idx->names.failed = true;
		return;
	}
	idx->syms = s;
	idx->cap = cap;
}

/* Writable, not read-only after relocation: where a lock can live. */
struct writable_ranges {
	uint64_t lo[WRITABLE_RANGES], hi[WRITABLE_RANGES];
	uint32_t n;
	uint64_t relro_lo, relro_hi;
};

static void find_writable(const struct elf_image *img, struct writable_ranges *w)
{
	rt_memset(w, 0, sizeof(*w));
	for (uint32_t i = 0; i < img->phnum; i++) {
		struct elf_segment seg;
		if (!elf_segment_at(img, i, &seg))
			continue;
		if (seg.type == PT_LOAD && (seg.flags & PF_W) && w->n < WRITABLE_RANGES) {
			w->lo[w->n] = seg.vaddr;
			w->hi[w->n] = seg.vaddr + seg.memsz;
			w->n++;
		} else if (seg.type == PT_GNU_RELRO) {
			w->relro_lo = seg.vaddr;
			w->relro_hi = seg.vaddr + seg.memsz;
		}
	}
}

static bool is_writable(const struct writable_ranges *w, uint64_t v)
{
	if (v >= w->relro_lo && v < w->relro_hi)
		return false;
	for (uint32_t i = 0; i < w->n; i++)
		if (v >= w->lo[i] && v < w->hi[i])
			return true;
	return false;
}

bool data_symbols_add_image(struct data_symbol_index *idx, const struct elf_image *img,
			  uint64_t bias)
{
	struct elf_symbol_iter it;
	if (!elf_symbols_begin(img, SHT_SYMTAB, &it) && !elf_symbols_begin(img, SHT_DYNSYM, &it))
		return true;
	struct writable_ranges w;
	find_writable(img, &w);
	if (w.n == 0)
		return true;
	for (uint64_t i = 1; i < it.count && !idx->names.failed; i++) {
		Elf64_Sym sym;
		uint64_t off = it.symtab.offset + i * sizeof(sym);
		if (off + sizeof(sym) > img->size)
			break;
		rt_memcpy(&sym, img->data + off, sizeof(sym));
		if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE || sym.st_size == 0 || !is_writable(&w, sym.st_value))
			continue;
		const char *name = elf_string_at(img, &it.strtab, sym.st_name);
		if (!name || !name[0])
			continue;
		if (idx->n >= INDEX_MAX_SYMBOLS || idx->names.len > UINT32_MAX - 4096u)
			break;
		if (idx->n == idx->cap)
			index_grow(idx);
		if (idx->names.failed)
			break;
		struct data_symbol *s = &idx->syms[idx->n++];
		s->start = sym.st_value + bias;
		s->size = sym.st_size;
		s->name = (uint32_t)idx->names.len;
		rt_buf_append(&idx->names, name, rt_strnlen(name, 1024) + 1);
	}
	return !idx->names.failed;
}

static bool sym_before(const void *a, const void *b)
{
	return ((const struct data_symbol *)a)->start < ((const struct data_symbol *)b)->start;
}

void data_symbols_finish(struct data_symbol_index *idx)
{
	rt_sort(idx->syms, idx->n, sizeof(idx->syms[0]), sym_before);
}

void data_symbols_free(struct data_symbol_index *idx)
{
	rt_free(idx->syms);
	rt_buf_free(&idx->names);
	rt_memset(idx, 0, sizeof(*idx));
}

const struct data_symbol *data_symbols_find(const struct data_symbol_index *idx, uint64_t addr)
{
	if (!idx || idx->n == 0 || addr < idx->syms[0].start)
		return NULL;
	/* The last symbol starting at or below addr (there is one: syms[0]). */
	uint32_t after = rt_upper_bound(idx->syms, idx->n, sizeof(idx->syms[0]),
					offsetof(struct data_symbol, start), addr);
	const struct data_symbol *s = &idx->syms[after - 1];
	return addr - s->start < s->size ? s : NULL;
}

/* Adds the data symbols of the file mapped by e (its first mapping). */
static void index_add_file(struct data_symbol_index *idx, const struct maps_entry *e)
{
	char path[1024];
	if (e->path_len == 0 || e->path_len >= sizeof(path) || e->path[0] != '/')
		return;
	rt_memcpy(path, e->path, e->path_len);
	path[e->path_len] = 0;
	struct maps_file f;
	if (!maps_map_file(e, path, &f))
		return;
	struct elf_image img;
	uint64_t bias;
	if (elf_open(&img, f.data, f.size) && elf_load_bias(&img, e->start, e->offset, maps_elf_flags(e), &bias))
		(void)data_symbols_add_image(idx, &img, bias);
	maps_unmap_file(&f);
}

struct data_symbol_index *data_symbols_build(void)
{
	struct data_symbol_index *idx = rt_calloc(1, sizeof(*idx));
	if (!idx)
		return NULL;
	struct rt_buf maps = { 0 };
	if (maps_read_self(&maps)) {
		size_t pos = 0;
		struct maps_entry e;
		uint64_t last_inode = 0;
		while (maps_next((const char *)maps.data, maps.len, &pos, &e)) {
			/* One pass per loaded file: its mapping at offset 0. */
			if (e.offset != 0 || e.inode == 0 || e.inode == last_inode)
				continue;
			last_inode = e.inode;
			index_add_file(idx, &e);
		}
	}
	rt_buf_free(&maps);
	if (idx->names.failed) {
		data_symbols_free(idx);
		rt_free(idx);
		return NULL;
	}
	data_symbols_finish(idx);
	return idx;
}
