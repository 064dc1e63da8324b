/* The module registry (see symbols.h). */
#include "symbols/symbols.h"

#include <linux/elf-em.h>
#include <linux/elf.h>

#include "rt/host.h"
#include "rt/rt.h"
#include "rt/search.h"
#include "rt/sys.h"
#include "symbols/debuginfo.h"
#include "symbols/elf.h"
#include "symbols/functions.h"
#include "symbols/maps.h"
#include "unwind/cfi.h"
#include "unwind/unwind.h"

/* PT_LOAD segments kept per module to place its other mappings. */
#define MODULE_MAX_SEGMENTS 16u

/* Scans of one module's symbols (symbols_prepare_names) at most: a
 * process that keeps exporting builds the module's table after them. */
#define SYMBOLS_SCANS_MAX 2u

struct sym_module {
	struct sym_module *next;
	char *path;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint64_t load_key; /* mapping start - file offset, for modules without segments */
	uint64_t bias;     /* one load of the file: mappings with the same bias */
	struct elf_load_segment segs[MODULE_MAX_SEGMENTS];
	uint32_t nsegs;
	char build_id[ELF_BUILD_ID_HEX_CAP];
	/* The module's file, mapped read-only by us for as long as the module
	 * lives: the unwinder reads its .eh_frame there, function names are read
	 * there.  Only touched pages take memory; symbols_trim() gives them back. */
	struct maps_file file;
	struct function_table functions; /* built on first resolve */
	bool functions_tried;
	/* The names of the pcs symbols_prepare_names readied by scanning the
	 * symbols rather than building the table, kept while the module lives
	 * (names handed out point into them). */
	struct function_scan scan[SYMBOLS_SCANS_MAX];
	uint32_t scans; /* scans made */
	uint32_t names_unreleased; /* names looked up since the file's pages were given back */
	struct cfi_index cfi; /* count 0: no unwind rules */
	uint64_t seen_generation;
	struct debug_ref debug_ref; /* where its DWARF is */
	struct debuginfo *debug;    /* opened on first resolve, NULL if none */
	uint64_t debug_deferred;    /* bytes its debug file's deferred DWARF needs inflated (0: none) */
	bool debug_tried;
	bool own; /* the profiler's own shared object */
};

struct sym_mapping {
	uint64_t start, end, offset;
	struct sym_module *module; /* NULL for anonymous code */
};

static struct rt_mutex registry_lock = RT_MUTEX_INIT;
static struct sym_module *modules;         /* live */
static struct sym_module *retired_modules; /* unloaded, awaiting garbage collection */
static struct sym_mapping *mappings;       /* executable mappings, sorted */
static uint32_t nmappings;
/* Where retired modules were mapped, sorted: samples taken before a module
 * went away (a dlclose, or node unmapping its second mapping of its own
 * executable at exit) are still named in the export that follows. */
static struct sym_mapping *retired_mappings;
static uint32_t nretired_mappings;
static uint64_t generation;
/* Refreshes that found the executable mappings changed. */
static uint64_t code_changes;
static uint64_t last_maps_hash;
/* The readable stack ranges the last refresh published, which code loaded
 * since (symbols_add_loaded) publishes again unchanged. */
static struct unwind_data_range *data_ranges;
static uint32_t ndata_ranges;
static char debug_dirs[1024];
static size_t dwarf_budget = (size_t)64 << 20;
static bool over_budget_said;

/* ---- loading one module ---- */

/* Heap bytes of search tables built for modules without .eh_frame_hdr. */
#define CFI_INDEX_BUDGET ((size_t)8 << 20)
static size_t cfi_index_bytes;
static bool cfi_budget_said;

/* Unwind rules of img, whose bytes stay where they are for the module's
 * life: through .eh_frame_hdr's table, else a search table built here
 * (within CFI_INDEX_BUDGET for all such modules together). */
static void attach_unwind_rules(struct sym_module *m, const struct elf_image *img)
{
	struct elf_section eh, hdr;
	uint64_t lo, hi;
	/* CFI of the architecture we were built for (its register numbers). */
	if (img->machine != ARCH_ELF_MACHINE || !elf_eh_frame(img, &eh))
		return;
	const uint8_t *eh_bytes = img->data + eh.offset;
	if (elf_eh_frame_hdr(img, &hdr) &&
	    cfi_index_from_hdr(&m->cfi, img->data + hdr.offset, (size_t)hdr.size, hdr.addr, eh_bytes,
			       eh.size, eh.addr))
		return;
	if (cfi_index_bytes >= CFI_INDEX_BUDGET) {
		if (!cfi_budget_said) {
			cfi_budget_said = true;
			rt_warn("unwind tables of modules without .eh_frame_hdr exceed %zu MiB; %s and "
				"later such modules are unwound by frame pointers",
				CFI_INDEX_BUDGET >> 20, m->path);
		}
		return;
	}
	if (elf_load_range(img, &lo, &hi) && hi > lo &&
	    cfi_index_build(&m->cfi, eh_bytes, eh.size, eh.addr, lo, hi - lo))
		cfi_index_bytes += m->cfi.owned_bytes;
}

/* Only the facts needed to place the module and find its tables: nothing
 * here reads more than headers, whatever the size of the code (a module
 * without .eh_frame_hdr excepted). */
static void load_from_image(struct sym_module *m, const struct elf_image *img,
			    const struct maps_entry *e)
{
	if (!elf_build_id_hex(img, m->build_id, sizeof(m->build_id)))
		m->build_id[0] = 0;
	uint32_t n = elf_load_segments(img, m->segs, MODULE_MAX_SEGMENTS);
	m->nsegs = RT_MIN(n, MODULE_MAX_SEGMENTS);
	if (!elf_bias_of_mapping(m->segs, m->nsegs, e->start, e->offset, maps_elf_flags(e), &m->bias)) {
		m->nsegs = 0;
		return;
	}
	if (m->path[0] == '/')
		debug_ref_read(img, &m->debug_ref);
	attach_unwind_rules(m, img);
}

/* Hands the vDSO's clock_gettime to rt (cheap clock reads everywhere), if
 * its address lies inside the vDSO mapping `e`. */
static void vdso_clock_install(const struct elf_image *img, const struct maps_entry *e)
{
	struct elf_symbol_iter it;
	struct elf_symbol sym;
	uint64_t bias;
	if (!elf_load_bias(img, e->start, e->offset, maps_elf_flags(e), &bias) || !elf_symbols_begin(img, SHT_DYNSYM, &it))
		return;
	while (elf_symbols_next(&it, &sym)) {
		if (rt_streq(sym.name, ARCH_VDSO_CLOCK_GETTIME)) {
			uint64_t at = sym.value + bias;
			if (at >= e->start && at < e->end)
				(void)rt_clock_use_vdso((uintptr_t)at);
			return;
		}
	}
}

/* Gives back the pages of our file mapping that reads brought in (the page
 * cache keeps them; the next read faults them back). */
static void release_file_pages(const struct maps_file *f)
{
	if (f->data != NULL)
		(void)sys_madvise((void *)(uintptr_t)f->data, f->size, 4 /* MADV_DONTNEED */);
}

/* The same for the whole pages under f's bytes [p, p + n) only: the cost of
 * giving pages back grows with the range, and a large library's file is a
 * hundred times its unwind or symbol tables.  Bytes outside the mapping
 * (a table built on the heap) are left alone. */
static void release_file_range(const struct maps_file *f, const void *p, uint64_t n)
{
	const uint8_t *b = p;
	if (f->data == NULL || b == NULL || b < f->data || b >= f->data + f->size || n == 0)
		return;
	uint64_t from = (uint64_t)(b - f->data) & ~(uint64_t)4095;
	uint64_t to = RT_MIN((uint64_t)(b - f->data) + n, (uint64_t)f->size);
	(void)sys_madvise((void *)(uintptr_t)(f->data + from), (size_t)(to - from), 4 /* MADV_DONTNEED */);
}

/* Gives back the pages of m's unwind rules (.eh_frame_hdr's table and
 * .eh_frame) that lookups read. */
static void release_unwind_pages(struct sym_module *m)
{
	release_file_range(&m->file, m->cfi.eh_frame, m->cfi.eh_frame_size);
	if (m->cfi.owned_bytes == 0)
		release_file_range(&m->file, m->cfi.table, (uint64_t)m->cfi.count * 8u);
}

static void load_from_file(struct sym_module *m, const struct maps_entry *e)
{
	struct elf_image img;
	if (!maps_map_file(e, m->path, &m->file))
		return;
	if (elf_open(&img, m->file.data, m->file.size))
		load_from_image(m, &img, e);
	release_file_pages(&m->file);
}

/* The module's function symbols, read from its file the first time a pc in
 * it is resolved (off the signal path, at export). */
static const struct function_table *module_functions(struct sym_module *m)
{
	struct elf_image img;
	if (m->functions_tried)
		return &m->functions;
	m->functions_tried = true;
	if (m->file.data != NULL && elf_open(&img, m->file.data, m->file.size))
		(void)function_table_build(&m->functions, &img, true, true);
	return &m->functions;
}

/* Frees the unwind rules and our mapping of the file (no unwinder may use
 * them any more, and no name handed out points into the file). */
static void module_release_file(struct sym_module *m)
{
	if (m->cfi.owned_bytes > 0)
		cfi_index_bytes -= RT_MIN(cfi_index_bytes, m->cfi.owned_bytes);
	cfi_index_free(&m->cfi);
	for (uint32_t i = 0; i < SYMBOLS_SCANS_MAX; i++)
		function_scan_free(&m->scan[i]);
	m->scans = 0;
	maps_unmap_file(&m->file);
}

static void module_free(struct sym_module *m)
{
	rt_free(m->path);
	function_table_free(&m->functions);
	module_release_file(m);
	debuginfo_free(m->debug);
	rt_free(m);
}

static bool path_is(const struct maps_entry *e, const char *s)
{
	size_t n = rt_strlen(s);
	return e->path_len == n && rt_memcmp(e->path, s, n) == 0;
}

static struct sym_module *module_create(const struct maps_entry *e)
{
	struct sym_module *m = rt_calloc(1, sizeof(*m));
	if (m == NULL)
		return NULL;
	m->path = rt_strndup(e->path, e->path_len);
	if (m->path == NULL) {
		rt_free(m);
		return NULL;
	}
	m->dev_major = e->dev_major;
	m->dev_minor = e->dev_minor;
	m->inode = e->inode;
	m->load_key = e->start - e->offset;
	if (e->path[0] == '/') {
		load_from_file(m, e);
	} else if (path_is(e, "[vdso]")) {
		struct elf_image img;
		if (elf_open(&img, (const void *)(uintptr_t)e->start, (size_t)(e->end - e->start))) {
			load_from_image(m, &img, e);
			/* A few symbols, in memory already. */
			(void)function_table_build(&m->functions, &img, true, false);
			m->functions_tried = true;
			vdso_clock_install(&img, e);
		}
	}
	return m;
}

/* The module of mapping e: same file and, placed by the module's program
 * headers, the same load bias (lld maps one file at a different
 * address - offset per segment, so that difference does not identify a load). */
static struct sym_module *module_find(const struct maps_entry *e)
{
	for (struct sym_module *m = modules; m != NULL; m = m->next) {
		if (m->inode != e->inode || m->dev_major != e->dev_major ||
		    m->dev_minor != e->dev_minor || rt_strlen(m->path) != e->path_len ||
		    rt_memcmp(m->path, e->path, e->path_len) != 0)
			continue;
		uint64_t bias;
		if (m->nsegs > 0 ? elf_bias_of_mapping(m->segs, m->nsegs, e->start, e->offset,
						       maps_elf_flags(e), &bias) &&
					   bias == m->bias
				 : m->load_key == e->start - e->offset)
			return m;
	}
	return NULL;
}

/* The live module of e's file and load, created and registered if there
 * is none yet; NULL if memory ran out. */
static struct sym_module *module_for(const struct maps_entry *e)
{
	struct sym_module *m = module_find(e);
	if (m == NULL) {
		m = module_create(e);
		if (m == NULL)
			return NULL;
		m->next = modules;
		modules = m;
	}
	return m;
}

/* ---- refresh ---- */

struct refresh_arrays {
	struct sym_mapping *maps;
	struct unwind_code_range *code;
	struct unwind_data_range *data;
	uint32_t nmaps, ndata;
};

static bool is_stack_candidate(const struct maps_entry *e)
{
	if ((e->perms & (MAPS_PERM_READ | MAPS_PERM_WRITE)) != (MAPS_PERM_READ | MAPS_PERM_WRITE) ||
	    (e->perms & MAPS_PERM_SHARED))
		return false;
	/* Anonymous memory only: a file-backed page can raise SIGBUS. */
	return e->inode == 0 && (e->path_len == 0 || e->path[0] == '[');
}

static void add_data_range(struct refresh_arrays *a, const struct maps_entry *e)
{
	uint32_t flags = path_is(e, "[stack]") ? UNWIND_DATA_GROWSDOWN : 0;
	struct unwind_data_range *last = a->ndata > 0 ? &a->data[a->ndata - 1] : NULL;
	/* Adjacent ranges merge (a stack split by mprotect stays one stack). */
	if (last != NULL && last->end == e->start && !(flags & UNWIND_DATA_GROWSDOWN)) {
		last->end = e->end;
		return;
	}
	a->data[a->ndata].start = e->start;
	a->data[a->ndata].end = e->end;
	a->data[a->ndata].flags = flags;
	a->ndata++;
}

/* Mapping e holds this library's code, and it is not the main program's
 * (a test program linked with our objects keeps its frames). */
static bool is_own_code(const struct maps_entry *e)
{
	uint64_t here = (uint64_t)(uintptr_t)&symbols_resolve;
	if (here < e->start || here >= e->end)
		return false;
	uint64_t entry = host_entry_pc();
	return entry == 0 || entry < e->start || entry >= e->end;
}

/* Which file is loaded where: the same in a fork child as in its parent,
 * different for another file or another load address (unwind_code_range.id). */
static uint64_t code_identity(const struct sym_module *m)
{
	uint64_t h = rt_hash_mix(RT_HASH_SEED, m->inode);
	h = rt_hash_mix(h, (uint64_t)m->dev_major << 32 | m->dev_minor);
	h = rt_hash_mix(h, m->bias);
	h = rt_hash_mix(h, m->load_key);
	if (m->inode == 0) /* [vdso], or a file whose identity the maps do not give */
		h = rt_hash_bytes(h, m->path, rt_strlen(m->path));
	return h != 0 ? h : 1;
}

/* What the unwinder needs of executable mapping sm. */
static void code_range_of(const struct sym_mapping *sm, struct unwind_code_range *cr)
{
	struct sym_module *m = sm->module;
	cr->start = sm->start;
	cr->end = sm->end;
	cr->bias = m != NULL ? m->bias : 0;
	cr->id = m != NULL ? code_identity(m) : 0;
	cr->cfi = m != NULL && m->cfi.count > 0 ? &m->cfi : NULL;
	cr->flags = (m != NULL && (m->path[0] == '/' || rt_streq(m->path, "[vdso]"))
			     ? UNWIND_CODE_READABLE
			     : 0u) |
		    (m != NULL && m->own ? UNWIND_CODE_OWN : 0u);
}

static bool build_arrays(const char *text, size_t len, struct refresh_arrays *a)
{
	struct maps_entry e;
	size_t pos = 0;
	uint32_t total = 0;
	while (maps_next(text, len, &pos, &e) && total < UINT32_MAX / 2)
		total++;
	a->maps = rt_calloc(total + 1, sizeof(*a->maps));
	a->code = rt_calloc(total + 1, sizeof(*a->code));
	a->data = rt_calloc(total + 1, sizeof(*a->data));
	if (a->maps == NULL || a->code == NULL || a->data == NULL)
		return false;
	pos = 0;
	uint64_t prev_start = 0;
	for (uint32_t i = 0; i < total && maps_next(text, len, &pos, &e); i++) {
		if (e.start < prev_start)
			continue; /* the kernel lists in order; anything else is skipped */
		prev_start = e.end;
		if (is_stack_candidate(&e))
			add_data_range(a, &e);
		if (!(e.perms & MAPS_PERM_EXEC))
			continue;
		struct sym_module *m = NULL;
		if (e.path_len > 0) {
			m = module_for(&e);
			if (m == NULL)
				return false;
			m->seen_generation = generation;
			if (is_own_code(&e))
				m->own = true;
		}
		struct sym_mapping *sm = &a->maps[a->nmaps];
		sm->start = e.start;
		sm->end = e.end;
		sm->offset = e.offset;
		sm->module = m;
		code_range_of(sm, &a->code[a->nmaps]);
		a->nmaps++;
	}
	return true;
}

/* A library opened and closed over and over must not pile up our mappings
 * of its file until the next export: once no unwinder can hold an old
 * snapshot, the file of a retired module nothing was named from (no string
 * of it handed out but its path and build id) is unmapped now. */
static void release_retired_files(void)
{
	bool idle = false, checked = false;
	for (struct sym_module *m = retired_modules; m != NULL; m = m->next) {
		if (m->file.data == NULL || m->functions.nfuncs > 0 || m->scans > 0 || m->debug != NULL)
			continue;
		if (!checked) {
			checked = true;
			idle = unwind_reclaim();
		}
		if (!idle)
			return;
		module_release_file(m);
	}
}

static bool mapping_before(const void *a, const void *b)
{
	return ((const struct sym_mapping *)a)->start < ((const struct sym_mapping *)b)->start;
}

/* Before the mappings are replaced: the ones of modules this refresh did
 * not see (about to be retired) join retired_mappings.  Without memory for
 * that, those samples stay unnamed (the registry itself is unaffected). */
static void keep_retired_mappings(void)
{
	uint32_t gone = 0;
	for (uint32_t i = 0; i < nmappings; i++)
		if (mappings[i].module != NULL && mappings[i].module->seen_generation != generation)
			gone++;
	if (gone == 0)
		return;
	struct sym_mapping *all =
		rt_realloc(retired_mappings, ((size_t)nretired_mappings + gone) * sizeof(*all));
	if (all == NULL)
		return;
	retired_mappings = all;
	for (uint32_t i = 0; i < nmappings; i++)
		if (mappings[i].module != NULL && mappings[i].module->seen_generation != generation)
			all[nretired_mappings++] = mappings[i];
	rt_sort(all, nretired_mappings, sizeof(*all), mapping_before);
}

uint64_t symbols_code_changes(void)
{
	rt_mutex_lock(&registry_lock);
	uint64_t n = code_changes;
	rt_mutex_unlock(&registry_lock);
	return n;
}

/* Whether the new executable mappings differ from the published ones. */
static bool code_differs(const struct sym_mapping *maps, uint32_t n)
{
	if (n != nmappings || mappings == NULL)
		return true;
	for (uint32_t i = 0; i < n; i++) {
		if (maps[i].start != mappings[i].start || maps[i].end != mappings[i].end ||
		    maps[i].offset != mappings[i].offset || maps[i].module != mappings[i].module)
			return true;
	}
	return false;
}

bool symbols_refresh(void)
{
	struct rt_buf text = {0};
	struct refresh_arrays a;
	bool ok = false;
	rt_memset(&a, 0, sizeof(a));
	if (!maps_read_self(&text)) {
		rt_buf_free(&text);
		return false;
	}
	uint64_t hash = rt_hash_bytes(RT_HASH_SEED, text.data, text.len);
	rt_mutex_lock(&registry_lock);
	if (hash == last_maps_hash && mappings != NULL) {
		rt_mutex_unlock(&registry_lock);
		rt_buf_free(&text);
		return true;
	}
	generation++;
	if (build_arrays((const char *)text.data, text.len, &a) &&
	    unwind_publish(a.code, a.nmaps, a.data, a.ndata)) {
		ok = true;
		if (code_differs(a.maps, a.nmaps))
			code_changes++;
		keep_retired_mappings();
		rt_free(mappings);
		mappings = a.maps;
		nmappings = a.nmaps;
		a.maps = NULL;
		rt_free(data_ranges);
		data_ranges = a.data;
		ndata_ranges = a.ndata;
		a.data = NULL;
		last_maps_hash = hash;
		/* Modules no longer mapped wait for symbols_collect_garbage(). */
		struct sym_module **link = &modules;
		while (*link != NULL) {
			struct sym_module *m = *link;
			if (m->seen_generation == generation) {
				link = &m->next;
				continue;
			}
			*link = m->next;
			m->next = retired_modules;
			retired_modules = m;
		}
		release_retired_files();
	}
	rt_mutex_unlock(&registry_lock);
	rt_free(a.maps);
	rt_free(a.code);
	rt_free(a.data);
	rt_buf_free(&text);
	return ok;
}

/* ---- code loaded since: from the loader's list ---- */

/* Executable segments of loaded objects read in one dl_iterate_phdr walk
 * (more: the walk gives up and the caller refreshes). */
#define LOADED_SEGMENTS_MAX 8192u
#define LOADED_PATH_MAX 4096u

struct loaded_walk {
	struct sym_mapping *seg; /* start, end, offset; module unset */
	uint32_t n;
	uint64_t page;
	bool overflow;
};

/* dl_iterate_phdr's callback: each object's executable PT_LOAD segments,
 * at the pages the loader mapped them to.  Runs under the loader's lock:
 * takes no lock and allocates nothing. */
static int collect_loaded(struct dl_phdr_info *opaque, size_t size, void *data)
{
	struct loaded_walk *w = data;
	const struct host_dl_phdr_info *info = (const struct host_dl_phdr_info *)(void *)opaque;
	if (size < offsetof(struct host_dl_phdr_info, dlpi_adds) || info->dlpi_phdr == NULL)
		return 0;
	const Elf64_Phdr *ph = info->dlpi_phdr;
	for (uint32_t i = 0; i < info->dlpi_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) || ph[i].p_filesz == 0)
			continue;
		if (w->n == LOADED_SEGMENTS_MAX) {
			w->overflow = true;
			return 1;
		}
		uint64_t at = info->dlpi_addr + ph[i].p_vaddr;
		w->seg[w->n++] = (struct sym_mapping){
			.start = at & ~(w->page - 1),
			.end = (at + ph[i].p_filesz + w->page - 1) & ~(w->page - 1),
			.offset = ph[i].p_offset & ~(w->page - 1),
		};
	}
	return 0;
}

/* The maps entry of the mapping [sm->start, sm->end) of a file, from the
 * kernel's link for it (the path /proc/self/maps shows) and the file's
 * identity; false if the kernel has no mapping with exactly those bounds
 * or its file cannot be named (deleted, a name maps would escape). */
static bool loaded_entry(const struct sym_mapping *sm, char *path, size_t cap, struct maps_entry *e)
{
	char link[64];
	rt_snprintf(link, sizeof(link), "/proc/self/map_files/%llx-%llx", (unsigned long long)sm->start,
		    (unsigned long long)sm->end);
	long n = sys_readlinkat(AT_FDCWD, link, path, cap - 1);
	if (n <= 0 || (size_t)n >= cap - 1 || path[0] != '/')
		return false;
	path[n] = 0;
	if (rt_memchr(path, '\n', (size_t)n) != NULL)
		return false;
	struct statx st;
	rt_memset(&st, 0, sizeof(st));
	if (rt_statx(AT_FDCWD, path, 0, STATX_INO, &st) != 0)
		return false;
	*e = (struct maps_entry){.start = sm->start, .end = sm->end, .offset = sm->offset,
				 .inode = st.stx_ino, .dev_major = st.stx_dev_major,
				 .dev_minor = st.stx_dev_minor,
				 .perms = MAPS_PERM_READ | MAPS_PERM_EXEC, .path = path,
				 .path_len = (size_t)n};
	return true;
}

/* The mappings with the new ones merged in by start; NULL without memory. */
static struct sym_mapping *merged_mappings(const struct sym_mapping *add, uint32_t nadd)
{
	struct sym_mapping *all = rt_malloc(((size_t)nmappings + nadd) * sizeof(*all));
	if (all == NULL)
		return NULL;
	uint32_t i = 0, j = 0, k = 0;
	while (i < nmappings || j < nadd)
		all[k++] = j == nadd || (i < nmappings && mappings[i].start < add[j].start) ? mappings[i++]
											   : add[j++];
	return all;
}

bool symbols_add_loaded(void)
{
	if (!dl_iterate_phdr)
		return false;
	struct loaded_walk w = {.seg = rt_malloc(LOADED_SEGMENTS_MAX * sizeof(struct sym_mapping)),
				.page = host_page_size()};
	char *path = rt_malloc(LOADED_PATH_MAX);
	struct sym_mapping *all = NULL;
	struct unwind_code_range *code = NULL;
	bool ok = false;
	if (w.seg == NULL || path == NULL)
		goto out;
	(void)dl_iterate_phdr(collect_loaded, &w);
	if (w.overflow)
		goto out;
	rt_mutex_lock(&registry_lock);
	/* The segments no mapping holds yet, ascending; one overlapping a known
	 * mapping without being it means the registry is out of date. */
	uint32_t nnew = 0;
	bool stale = mappings == NULL;
	for (uint32_t i = 0; i < w.n && !stale; i++) {
		uint32_t at = rt_upper_bound(mappings, nmappings, sizeof(mappings[0]),
					     offsetof(struct sym_mapping, end), w.seg[i].start);
		if (at < nmappings && mappings[at].start < w.seg[i].end) {
			stale = mappings[at].start != w.seg[i].start || mappings[at].end != w.seg[i].end;
			continue;
		}
		w.seg[nnew++] = w.seg[i];
	}
	rt_sort(w.seg, nnew, sizeof(w.seg[0]), mapping_before);
	for (uint32_t i = 1; i < nnew && !stale; i++)
		stale = w.seg[i].start < w.seg[i - 1].end;
	if (stale || nnew == 0) {
		ok = !stale;
		goto unlock;
	}
	for (uint32_t i = 0; i < nnew; i++) {
		struct maps_entry e;
		if (!loaded_entry(&w.seg[i], path, LOADED_PATH_MAX, &e))
			goto unlock;
		struct sym_module *m = module_for(&e);
		if (m == NULL)
			goto unlock;
		m->own = m->own || is_own_code(&e);
		w.seg[i].module = m;
	}
	all = merged_mappings(w.seg, nnew);
	code = all != NULL ? rt_malloc(((size_t)nmappings + nnew) * sizeof(*code)) : NULL;
	if (code == NULL)
		goto unlock;
	for (uint32_t i = 0; i < nmappings + nnew; i++)
		code_range_of(&all[i], &code[i]);
	if (!unwind_publish(code, nmappings + nnew, data_ranges, ndata_ranges))
		goto unlock;
	rt_free(mappings);
	mappings = all;
	nmappings += nnew;
	all = NULL;
	/* Every live module is still mapped: the next refresh retires what it
	 * does not see. */
	generation++;
	for (struct sym_module *m = modules; m != NULL; m = m->next)
		m->seen_generation = generation;
	ok = true;
unlock:
	rt_mutex_unlock(&registry_lock);
out:
	rt_free(all);
	rt_free(code);
	rt_free(path);
	rt_free(w.seg);
	return ok;
}

void symbols_configure(const char *dirs, size_t budget, uint32_t inflate_ppm, uint32_t cap_ppm)
{
	rt_mutex_lock(&registry_lock);
	rt_strlcpy(debug_dirs, dirs != NULL ? dirs : "", sizeof(debug_dirs));
	dwarf_budget = budget;
	debuginfo_limit_inflating(inflate_ppm, cap_ppm);
	rt_mutex_unlock(&registry_lock);
}

void symbols_note_profiler_cost(uint64_t spent_ns)
{
	rt_mutex_lock(&registry_lock);
	debuginfo_note_profiler_cost(spent_ns);
	rt_mutex_unlock(&registry_lock);
}

/* Source lines and inlined frames of link-time address addr from the
 * module's debug information, opened the first time. */
static void resolve_lines(struct sym_module *m, uint64_t addr, struct sw_frame_info *out)
{
	if (!m->debug_tried) {
		m->debug_tried = true;
		if (dwarf_budget > 0 && (m->debug_ref.has_dwarf || m->debug_ref.build_id[0] ||
					 m->debug_ref.debuglink[0]))
			m->debug = debuginfo_open(m->path, &m->debug_ref, debug_dirs, dwarf_budget,
						  &m->debug_deferred);
	} else if (m->debug != NULL && m->debug_deferred != 0 &&
		   debuginfo_load_allowed(m->debug_deferred)) {
		/* A deferred load is tried again once the CPU share allows what
		 * it needs, not at every pc; one that cannot load at all leaves
		 * the module as if no debug file had been found. */
		if (!debuginfo_load_deferred(m->debug, dwarf_budget, &m->debug_deferred) &&
		    m->debug_deferred == 0) {
			debuginfo_free(m->debug);
			m->debug = NULL;
		}
	}
	if (m->debug == NULL)
		return;
	struct dwarf_frame fr[DWARF_MAX_FRAMES];
	uint32_t n = 0;
	enum dwarf_lookup_status st = debuginfo_lookup(m->debug, addr, fr, &n);
	if (st == DWARF_OVER_BUDGET && !over_budget_said) {
		over_budget_said = true;
		rt_warn("debug information of %s needs more than STOWAWAY_DEBUG_MEMORY_MB=%zu; "
			"some of its frames have no lines or inlined frames",
			debuginfo_path(m->debug), dwarf_budget >> 20);
	}
	/* The debug file's symbol table names code its DWARF may not cover. */
	if (out->function == NULL)
		out->function = debuginfo_symbol(m->debug, addr);
	/* Looked up: an address the DWARF does not cover has no inlined frames
	 * (a lookup deferred by the CPU bound was not made: names only now). */
	out->debug_info = st != DWARF_OVER_BUDGET && st != DWARF_DEFERRED;
	if (st != DWARF_FOUND || n == 0)
		return;
	const struct dwarf_frame *outer = &fr[n - 1];
	if (out->function == NULL)
		out->function = outer->name;
	out->file = outer->file;
	out->line = outer->line;
	/* Inlined frames, innermost first; a deeper chain keeps the innermost. */
	uint32_t k = n - 1 < SW_MAX_INLINED ? n - 1 : SW_MAX_INLINED;
	for (uint32_t i = 0; i < k; i++) {
		out->inlined[i].function = fr[i].name;
		out->inlined[i].file = fr[i].file;
		out->inlined[i].line = fr[i].line;
	}
	out->n_inlined = k;
}

/* Counts for symbols_stats (under the registry lock). */
static uint64_t names_looked_up, names_from_cache, name_page_releases, names_from_scans;

/* Name lookups between two releases of a module's file pages: each lands
 * on scattered symbol and string table pages (the kernel maps 64 KiB around
 * each fault), so an export resolving thousands of pcs in a large library
 * would otherwise end with most of its tables resident. */
#define NAMES_PER_RELEASE 64u

/* Gives back the file pages name lookups read, every NAMES_PER_RELEASE
 * lookups (names handed out stay valid: a private read-only mapping reads
 * them again from the page cache). */
static void release_names_read(struct sym_module *m)
{
	if (m->file.data == NULL || ++m->names_unreleased < NAMES_PER_RELEASE)
		return;
	m->names_unreleased = 0;
	name_page_releases++;
	function_table_release_pages(&m->functions);
}

/* Function names already looked up, by module and link-time address: the
 * profiles of one export share most of their pcs, and every lookup reads
 * scattered file pages.  Direct-mapped; entries name modules that are only
 * freed by symbols_collect_garbage, which empties it. */
#define NAME_CACHE_SIZE 2048u
static struct name_cache_entry {
	const struct sym_module *module; /* NULL: empty */
	uint64_t addr;
	const char *function;
} name_cache[NAME_CACHE_SIZE];

static struct name_cache_entry *name_cache_slot(const struct sym_module *m, uint64_t addr)
{
	uint64_t h = (addr ^ (uint64_t)(uintptr_t)m) * RT_HASH_MUL64;
	return &name_cache[h >> 53]; /* the top 11 bits: NAME_CACHE_SIZE slots */
}

/* The function containing addr in m's symbols, from the cache or looked up. */
static const char *function_of(struct sym_module *m, uint64_t addr)
{
	struct name_cache_entry *c = name_cache_slot(m, addr);
	if (c->module == m && c->addr == addr) {
		names_from_cache++;
		return c->function;
	}
	names_looked_up++;
	const char *name = NULL;
	bool scanned = false;
	for (uint32_t i = m->scans; i > 0 && !scanned && !m->functions_tried; i--)
		scanned = function_scan_lookup(&m->scan[i - 1], addr, &name);
	if (scanned) {
		names_from_scans++; /* a copy: no file page read */
	} else {
		name = function_table_lookup(module_functions(m), addr);
		release_names_read(m);
	}
	c->module = m;
	c->addr = addr;
	c->function = name;
	return name;
}

/* The mapping of the sorted, non-overlapping v[0..n) that contains pc. */
static const struct sym_mapping *mapping_of(const struct sym_mapping *v, uint32_t n, uint64_t pc)
{
	uint32_t lo = rt_upper_bound(v, n, sizeof(v[0]), offsetof(struct sym_mapping, end), pc);
	return lo < n && pc >= v[lo].start ? &v[lo] : NULL;
}

/* A live module loaded from the same file as retired module m (node maps
 * its own executable twice and unmaps one copy): its names fit m's
 * addresses, by m's own bias. */
static struct sym_module *live_twin(const struct sym_module *m)
{
	for (struct sym_module *t = modules; t != NULL; t = t->next)
		if (t->inode == m->inode && t->dev_major == m->dev_major &&
		    t->dev_minor == m->dev_minor && rt_streq(t->path, m->path))
			return t;
	return NULL;
}

/* The module m's names are read from: a retired module whose file we gave
 * back names through its twin. */
static struct sym_module *names_module(struct sym_module *m)
{
	if (m->file.data == NULL && !m->functions_tried) {
		struct sym_module *twin = live_twin(m);
		if (twin != NULL)
			return twin;
	}
	return m;
}

/* A module is scanned for names when its symbols are at least this many
 * times the pcs asked in it (a scan keeps the names it answers and 12
 * bytes per pc, a table 16 bytes per symbol, and only a table sorts). */
#define SCAN_SYMBOLS_PER_PC 16u

void symbols_prepare_names(const uint64_t *pcs, uint32_t n)
{
	if (n == 0)
		return;
	struct sym_module **of = rt_malloc((size_t)n * sizeof(struct sym_module *));
	uint64_t *addrs = rt_malloc((size_t)n * sizeof(*addrs));
	if (of == NULL || addrs == NULL) {
		rt_free(of);
		rt_free(addrs);
		return;
	}
	rt_mutex_lock(&registry_lock);
	for (uint32_t i = 0; i < n; i++) {
		const struct sym_mapping *sm = mapping_of(mappings, nmappings, pcs[i]);
		if (sm == NULL)
			sm = mapping_of(retired_mappings, nretired_mappings, pcs[i]);
		struct sym_module *m = sm != NULL && sm->module != NULL ? names_module(sm->module) : NULL;
		bool ascending = i == 0 || pcs[i] > pcs[i - 1];
		of[i] = m != NULL && ascending && m->file.data != NULL && !m->functions_tried &&
				m->scans < SYMBOLS_SCANS_MAX ? m : NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct sym_module *m = of[i];
		if (m == NULL)
			continue;
		/* One bias per module: its pcs ascending are its addresses ascending. */
		uint32_t k = 0;
		for (uint32_t j = i; j < n; j++) {
			if (of[j] == m) {
				addrs[k++] = pcs[j] - m->bias;
				of[j] = NULL;
			}
		}
		struct elf_image img;
		if (!elf_open(&img, m->file.data, m->file.size) ||
		    (uint64_t)k * SCAN_SYMBOLS_PER_PC > function_symbols_in(&img, true))
			continue;
		if (function_scan_build(&m->scan[m->scans], &img, true, true, addrs, k))
			m->scans++;
	}
	rt_mutex_unlock(&registry_lock);
	rt_free(of);
	rt_free(addrs);
}

bool symbols_module_path(uint64_t pc, char *buf, size_t cap)
{
	rt_mutex_lock(&registry_lock);
	const struct sym_mapping *sm = mapping_of(mappings, nmappings, pc);
	bool found = sm != NULL && sm->module != NULL;
	if (found)
		rt_strlcpy(buf, sm->module->path, cap);
	rt_mutex_unlock(&registry_lock);
	return found;
}

/* The module whose executable mapping holds pc, with its file opened as
 * an ELF image in *img; NULL if none or its file is unreadable.  Under
 * registry_lock. */
static struct sym_module *module_image_at(uint64_t pc, struct elf_image *img)
{
	const struct sym_mapping *sm = mapping_of(mappings, nmappings, pc);
	struct sym_module *m = sm != NULL ? sm->module : NULL;
	if (m == NULL || m->file.data == NULL || !elf_open(img, m->file.data, m->file.size))
		return NULL;
	return m;
}

int symbols_module_defines(uint64_t pc, const char *name)
{
	int found = -1;
	struct elf_image img;
	struct elf_symbol_iter it;
	rt_mutex_lock(&registry_lock);
	struct sym_module *m = module_image_at(pc, &img);
	if (m != NULL) {
		found = 0;
		if (elf_symbols_begin(&img, SHT_DYNSYM, &it)) {
			struct elf_symbol sym;
			while (found == 0 && elf_symbols_next(&it, &sym))
				found = rt_streq(sym.name, name);
			release_file_range(&m->file, img.data + it.symtab.offset, it.symtab.size);
			release_file_range(&m->file, img.data + it.strtab.offset, it.strtab.size);
		}
	}
	rt_mutex_unlock(&registry_lock);
	return found;
}

int symbols_module_names_any(uint64_t pc, const char *const *names, uint32_t n)
{
	int found = -1;
	struct elf_image img;
	rt_mutex_lock(&registry_lock);
	struct sym_module *m = module_image_at(pc, &img);
	static const uint32_t tables[] = {SHT_SYMTAB, SHT_DYNSYM};
	for (uint32_t t = 0; m != NULL && t < RT_ARRAY_LEN(tables) && found < 0; t++) {
		struct elf_symbol_iter it;
		if (!elf_symbols_begin(&img, tables[t], &it))
			continue;
		if (it.strtab.size > SYMBOLS_NAMES_SCAN_MAX) {
			rt_debug("symbols: %s: a string table of %llu MiB is not searched for names", m->path,
				 (unsigned long long)(it.strtab.size >> 20));
			continue;
		}
		found = elf_strings_find(&img, &it.strtab, names, n);
		release_file_range(&m->file, img.data + it.strtab.offset, it.strtab.size);
	}
	rt_mutex_unlock(&registry_lock);
	return found;
}

void symbols_resolve_for_children(const uint64_t *pcs, uint32_t n, bool with_allowance)
{
	struct sw_frame_info info;
	if (with_allowance) {
		rt_mutex_lock(&registry_lock);
		debuginfo_share_for_children(true);
		rt_mutex_unlock(&registry_lock);
	}
	for (uint32_t i = 0; i < n; i++)
		(void)symbols_resolve(NULL, pcs[i], &info);
	if (with_allowance) {
		rt_mutex_lock(&registry_lock);
		debuginfo_share_for_children(false);
		rt_mutex_unlock(&registry_lock);
	}
}

bool symbols_resolve(void *ctx, uint64_t pc, struct sw_frame_info *out)
{
	RT_UNUSED(ctx);
	rt_memset(out, 0, sizeof(*out));
	out->map_path = "";
	out->build_id = "";
	rt_mutex_lock(&registry_lock);
	const struct sym_mapping *sm = mapping_of(mappings, nmappings, pc);
	if (sm == NULL)
		sm = mapping_of(retired_mappings, nretired_mappings, pc);
	if (sm != NULL) {
		out->map_start = sm->start;
		out->map_limit = sm->end;
		out->map_offset = sm->offset;
	}
	struct sym_module *m = sm != NULL ? sm->module : NULL;
	if (m != NULL) {
		out->map_path = m->path;
		out->build_id = m->build_id;
		out->own_code = m->own;
		uint64_t addr = pc - m->bias;
		struct sym_module *names = names_module(m);
		out->function = function_of(names, addr);
		/* Our own frames are left out of stacks: no lines needed. */
		if (m->path[0] == '/' && !m->own)
			resolve_lines(names, addr, out);
	}
	rt_mutex_unlock(&registry_lock);
	return sm != NULL;
}

void symbols_collect_garbage(void)
{
	rt_mutex_lock(&registry_lock);
	if (retired_modules != NULL && unwind_reclaim()) {
		rt_free(retired_mappings);
		retired_mappings = NULL;
		nretired_mappings = 0;
		rt_memset(name_cache, 0, sizeof(name_cache));
		while (retired_modules != NULL) {
			struct sym_module *m = retired_modules;
			retired_modules = m->next;
			module_free(m);
		}
	}
	rt_mutex_unlock(&registry_lock);
}

bool symbols_stack_bounds_of(uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	struct rt_buf text = {0};
	struct maps_entry e;
	size_t pos = 0;
	bool found = false;
	if (maps_read_self(&text)) {
		while (!found && maps_next((const char *)text.data, text.len, &pos, &e)) {
			if (sp >= e.start && sp < e.end && is_stack_candidate(&e)) {
				*lo = e.start;
				*hi = e.end;
				found = true;
			}
		}
	}
	rt_buf_free(&text);
	return found;
}

void symbols_trim(uint64_t keep_unwind_bytes)
{
	if (!rt_mutex_trylock(&registry_lock))
		return;
	uint64_t unwind_read = 0;
	for (struct sym_module *m = modules; m != NULL; m = m->next)
		if (m->file.data != NULL)
			unwind_read += cfi_index_read_bytes(&m->cfi);
	for (struct sym_module *m = modules; m != NULL; m = m->next) {
		if (m->file.data != NULL && unwind_read > keep_unwind_bytes &&
		    cfi_index_read_bytes(&m->cfi) > 0) {
			cfi_index_forget_reads(&m->cfi);
			release_unwind_pages(m);
		}
		if (m->debug != NULL)
			debuginfo_trim(m->debug);
	}
	rt_mutex_unlock(&registry_lock);
}

void symbols_after_fork_child(void)
{
	rt_mutex_reset(&registry_lock);
	unwind_after_fork_child();
}

void symbols_stats(struct symbols_stats *st)
{
	rt_memset(st, 0, sizeof(*st));
	rt_mutex_lock(&registry_lock);
	for (const struct sym_module *m = modules; m != NULL; m = m->next) {
		st->modules++;
		if ((m->functions.nfuncs > 0 || m->scans > 0) && m->path[0] == '/')
			st->modules_named++;
		st->functions += m->functions.nfuncs;
		st->function_bytes += m->functions.bytes;
		if (m->cfi.count > 0 && m->cfi.owned_bytes == 0)
			st->unwind_in_place++;
		else if (m->cfi.count > 0)
			st->unwind_built++;
		st->unwind_bytes += m->cfi.owned_bytes;
		if (m->debug != NULL && m->debug_deferred == 0)
			st->modules_with_lines++;
	}
	st->names_looked_up = names_looked_up;
	st->names_from_cache = names_from_cache;
	st->name_page_releases = name_page_releases;
	st->names_from_scans = names_from_scans;
	rt_mutex_unlock(&registry_lock);
}

size_t symbols_describe(char *buf, size_t cap)
{
	struct symbols_stats st;
	struct unwind_counts uc;
	symbols_stats(&st);
	unwind_counts_get(&uc);
	uint64_t inflated, decoded, reading_ns = debuginfo_reading_ns(&inflated, &decoded);
	uint64_t cap_ns, others_ns = debuginfo_profiler_ns(&cap_ns);
	return rt_snprintf(buf, cap,
			   "stowaway: symbols: %u modules mapped, names read for %u (%llu functions, "
			   "%llu KiB), lines for %u (%llu lookups deferred by the CPU cap; %llu us "
			   "inflating %llu KiB and decoding %llu KiB; the rest of us had used %llu us of the "
			   "cap's %llu us); unwind rules "
			   "read in place for %u, search tables built for %u (%llu KiB), %llu rules looked "
			   "up; %llu stacks stopped at code mapped since the last refresh; %llu "
			   "allocation stacks answered by the unwind memo",
			   st.modules, st.modules_named, (unsigned long long)st.functions,
			   (unsigned long long)(st.function_bytes >> 10), st.modules_with_lines,
			   (unsigned long long)debuginfo_deferred_lookups(),
			   (unsigned long long)(reading_ns / 1000), (unsigned long long)(inflated >> 10),
			   (unsigned long long)(decoded >> 10), (unsigned long long)(others_ns / 1000),
			   (unsigned long long)(cap_ns / 1000), st.unwind_in_place, st.unwind_built,
			   (unsigned long long)(st.unwind_bytes >> 10),
			   (unsigned long long)uc.rule_lookups, (unsigned long long)uc.unknown_code,
			   (unsigned long long)uc.stacks_from_memo);
}
