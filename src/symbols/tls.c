/* TLS symbols of loaded modules, from the loader's in-memory tables (see tls.h). */
#include "symbols/tls.h"

#include <linux/elf.h>

#include "rt/host.h"
#include "rt/rt.h"

#ifndef STT_TLS
#define STT_TLS 6
#endif
#ifndef DT_GNU_HASH
#define DT_GNU_HASH 0x6ffffef5
#endif

#define DYNAMIC_MAX_ENTRIES 1024u
#define CHAIN_MAX 100000u


/* glibc rewrites the d_ptr entries of a writable dynamic section to run-time
 * addresses; musl leaves them as link-time ones.  A link-time address of a
 * module with a nonzero bias is below the bias. */
static uint64_t runtime_addr(uint64_t base, uint64_t ptr)
{
	return base != 0 && ptr < base ? ptr + base : ptr;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = h * 33u + *p;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		h = (h << 4) + *p;
		uint32_t g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

struct dyn_tables {
	const Elf64_Sym *symtab;
	const char *strtab;
	uint64_t strsz;
	const uint32_t *gnu_hash, *sysv_hash;
};

static bool name_is(const struct dyn_tables *t, uint32_t st_name, const char *name)
{
	if (st_name >= t->strsz)
		return false;
	size_t n = rt_strlen(name);
	if (n >= t->strsz - st_name)
		return false;
	return rt_memcmp(t->strtab + st_name, name, n + 1) == 0;
}

static const Elf64_Sym *lookup_gnu(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->gnu_hash;
	uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
	if (nbuckets == 0 || bloom_size == 0)
		return NULL;
	const uint64_t *bloom = (const uint64_t *)(h + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t hash = gnu_hash(name);
	uint32_t shift2 = h[3];
	uint64_t word = bloom[(hash / 64u) % bloom_size];
	uint64_t mask = (1ull << (hash % 64u)) | (1ull << ((hash >> shift2) % 64u));
	if ((word & mask) != mask)
		return NULL;
	uint32_t i = buckets[hash % nbuckets];
	if (i < symoffset)
		return NULL;
	for (uint32_t n = 0; n < CHAIN_MAX; n++, i++) {
		uint32_t h2 = chain[i - symoffset];
		if ((h2 | 1u) == (hash | 1u) && name_is(t, t->symtab[i].st_name, name))
			return &t->symtab[i];
		if (h2 & 1u)
			break;
	}
	return NULL;
}

static const Elf64_Sym *lookup_sysv(const struct dyn_tables *t, const char *name)
{
	const uint32_t *h = t->sysv_hash;
	uint32_t nbucket = h[0], nchain = h[1];
	if (nbucket == 0)
		return NULL;
	const uint32_t *bucket = h + 2, *chain = bucket + nbucket;
	uint32_t i = bucket[sysv_hash(name) % nbucket];
	for (uint32_t n = 0; i != 0 && i < nchain && n < CHAIN_MAX; n++, i = chain[i])
		if (name_is(t, t->symtab[i].st_name, name))
			return &t->symtab[i];
	return NULL;
}

bool tls_dynsym_lookup(uint64_t base, const void *dynamic, const char *name, uint64_t *value,
		       uint64_t *size, uint8_t *type)
{
	struct dyn_tables t = { 0 };
	const Elf64_Dyn *d = dynamic;
	for (uint32_t i = 0; i < DYNAMIC_MAX_ENTRIES && d[i].d_tag != DT_NULL; i++) {
		uint64_t v = d[i].d_un.d_ptr;
		switch (d[i].d_tag) {
		case DT_SYMTAB: t.symtab = (const Elf64_Sym *)runtime_addr(base, v); break;
		case DT_STRTAB: t.strtab = (const char *)runtime_addr(base, v); break;
		case DT_STRSZ: t.strsz = v; break;
		case DT_HASH: t.sysv_hash = (const uint32_t *)runtime_addr(base, v); break;
		case DT_GNU_HASH: t.gnu_hash = (const uint32_t *)runtime_addr(base, v); break;
		default: break;
		}
	}
	if (!t.symtab || !t.strtab || t.strsz == 0 || (!t.gnu_hash && !t.sysv_hash))
		return false;
	const Elf64_Sym *s = t.gnu_hash ? lookup_gnu(&t, name) : lookup_sysv(&t, name);
	if (!s || s->st_shndx == SHN_UNDEF)
		return false;
	*value = s->st_value;
	*size = s->st_size;
	*type = (uint8_t)ELF64_ST_TYPE(s->st_info);
	return true;
}

struct sites_walk {
	const char *name;
	size_t static_extent;
	tls_symbol_found_fn found;
	void *ctx;
	int count;
};

static int visit_module(struct dl_phdr_info *info_opaque, size_t size, void *data)
{
	struct sites_walk *w = data;
	const struct host_dl_phdr_info *info = (const struct host_dl_phdr_info *)(void *)info_opaque;
	if (size < sizeof(*info) || info->dlpi_tls_modid == 0 || !info->dlpi_phdr)
		return 0;
	const Elf64_Phdr *phdr = info->dlpi_phdr;
	const void *dynamic = NULL;
	for (uint32_t i = 0; i < info->dlpi_phnum; i++)
		if (phdr[i].p_type == PT_DYNAMIC)
			dynamic = (const void *)(info->dlpi_addr + phdr[i].p_vaddr);
	uint64_t value = 0, sym_size = 0;
	uint8_t type = 0;
	if (!dynamic || !tls_dynsym_lookup(info->dlpi_addr, dynamic, w->name, &value, &sym_size, &type) ||
	    type != STT_TLS)
		return 0;
	struct tls_symbol_site site = {
		.module_base = info->dlpi_addr,
		.module = info->dlpi_name ? info->dlpi_name : "",
		.symbol_value = value,
		.symbol_size = sym_size,
		.tls_modid = info->dlpi_tls_modid,
	};
	if (info->dlpi_tls_data) {
		uintptr_t addr = (uintptr_t)info->dlpi_tls_data + value;
		intptr_t delta = (intptr_t)(addr - rt_thread_pointer());
		uintptr_t distance = delta < 0 ? (uintptr_t)-delta : (uintptr_t)delta;
		if (distance <= w->static_extent) {
			site.is_static = true;
			site.tp_delta = delta;
		}
	}
	w->found(&site, w->ctx);
	w->count++;
	return 0;
}

int tls_symbol_sites(const char *name, size_t static_extent, tls_symbol_found_fn found, void *ctx)
{
	if (!dl_iterate_phdr)
		return -1;
	struct sites_walk w = { name, static_extent, found, ctx, 0 };
	(void)dl_iterate_phdr(visit_module, &w);
	return w.count;
}
