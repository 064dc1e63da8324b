/* Function symbol tables and the naming rules (see functions.h). */
#include "symbols/functions.h"

#include <linux/elf.h>

#include "rt/rt.h"
#include "rt/search.h"

const char *function_display_name(const char *name)
{
	if (name != NULL && rt_starts_with(name, "__GI_") && name[5] != 0)
		return name + 5;
	return name;
}

uint32_t function_alias_preference(const struct elf_symbol *sym, const char *name)
{
	uint32_t bind = sym->bind == STB_GLOBAL ? 2u : sym->bind == STB_WEAK ? 1u : 0u;
	uint32_t underscores = 0;
	while (underscores < 15 && name[underscores] == '_')
		underscores++;
	size_t len = rt_strlen(name);
	uint32_t shortness = len >= 255 ? 0u : (uint32_t)(255 - len);
	return bind << 24 | (sym->hidden_version ? 0u : 1u) << 23 | (15u - underscores) << 8 | shortness;
}

static bool entry_before(const void *pa, const void *pb)
{
	const struct function_entry *a = pa, *b = pb;
	if (a->start != b->start)
		return a->start < b->start;
	/* Among aliases the preferred one sorts last. */
	return a->pref < b->pref;
}

struct collector {
	struct function_entry *funcs;
	size_t n, cap;
	struct rt_buf names;
	bool failed;
};

static void collect(const struct elf_image *img, uint32_t type, struct collector *c)
{
	struct elf_symbol_iter it;
	struct elf_symbol sym;
	if (!elf_symbols_begin(img, type, &it))
		return;
	while (!c->failed && elf_symbols_next(&it, &sym)) {
		if (sym.size == 0)
			continue; /* covers nothing we could claim */
		if (c->names.len > UINT32_MAX - 4096 || c->n >= UINT32_MAX) {
			c->failed = true;
			break;
		}
		if (c->n == c->cap) {
			size_t ncap = c->cap ? c->cap * 2 : 512;
			struct function_entry *nf = rt_realloc(c->funcs, ncap * sizeof(*nf));
			if (nf == NULL) {
				c->failed = true;
				break;
			}
			c->funcs = nf;
			c->cap = ncap;
		}
		const char *name = function_display_name(sym.name);
		struct function_entry *f = &c->funcs[c->n++];
		f->start = sym.value;
		f->size = sym.size;
		f->pref = function_alias_preference(&sym, name);
		f->name = (uint32_t)c->names.len;
		rt_buf_append(&c->names, name, rt_strlen(name) + 1);
	}
}

bool function_table_build(struct function_table *t, const struct elf_image *img, bool with_dynsym)
{
	struct collector c;
	rt_memset(&c, 0, sizeof(c));
	rt_memset(t, 0, sizeof(*t));
	collect(img, SHT_SYMTAB, &c);
	if (with_dynsym)
		collect(img, SHT_DYNSYM, &c);
	if (c.failed || c.names.failed || c.n == 0) {
		rt_free(c.funcs);
		rt_buf_free(&c.names);
		return false;
	}
	rt_sort(c.funcs, c.n, sizeof(c.funcs[0]), entry_before);
	/* Keep the last (preferred) entry of each address. */
	size_t out = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (i + 1 < c.n && c.funcs[i + 1].start == c.funcs[i].start)
			continue;
		c.funcs[out++] = c.funcs[i];
	}
	t->funcs = c.funcs;
	t->nfuncs = (uint32_t)out;
	t->names = (char *)c.names.data;
	return true;
}

const char *function_table_lookup(const struct function_table *t, uint64_t addr)
{
	uint32_t lo = rt_upper_bound(t->funcs, t->nfuncs, sizeof(t->funcs[0]),
				     offsetof(struct function_entry, start), addr);
	/* A few entries back in case a small symbol sits inside a larger one. */
	for (uint32_t i = lo, k = 0; i > 0 && k < 4; i--, k++) {
		const struct function_entry *f = &t->funcs[i - 1];
		if (addr - f->start < f->size)
			return t->names + f->name;
	}
	return NULL;
}

void function_table_free(struct function_table *t)
{
	rt_free(t->funcs);
	rt_free(t->names);
	rt_memset(t, 0, sizeof(*t));
}
