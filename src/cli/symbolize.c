/* Offline symbolization (see symbolize.h). */
#include "cli/symbolize.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/profiles.h"
#include "cli/util.h"
#include "deflate/deflate.h"
#include "demangle/demangle.h"
#include "rt/rt.h"
#include "symbols/debuginfo.h"
#include "symbols/elf.h"

#define DEBUG_BUDGET ((size_t)1 << 30) /* per debug file: the CLI may use more than the library */
#define SCAN_MAX_DEPTH 8
#define SCAN_MAX_FILES 200000
#define DEMANGLED_CAP 4096

struct found_file {
	char build_id[ELF_BUILD_ID_HEX_CAP];
	char *path;
};

struct debug_entry {
	char build_id[ELF_BUILD_ID_HEX_CAP];
	struct debuginfo *di; /* NULL: none found */
};

struct debug_store {
	char *const *dirs;
	size_t n_dirs;
	struct debug_entry *entries;
	size_t n_entries, cap_entries;
	struct found_file *found; /* every ELF file under the dirs, after the first scan */
	size_t n_found, cap_found;
	int scanned;
};

struct debug_store *debug_store_new(char *const *dirs, size_t n)
{
	struct debug_store *ds = xcalloc(1, sizeof(*ds));
	ds->dirs = dirs;
	ds->n_dirs = n;
	return ds;
}

void debug_store_free(struct debug_store *ds)
{
	if (ds == NULL)
		return;
	for (size_t i = 0; i < ds->n_entries; i++)
		debuginfo_free(ds->entries[i].di);
	for (size_t i = 0; i < ds->n_found; i++)
		free(ds->found[i].path);
	free(ds->entries);
	free(ds->found);
	free(ds);
}

/* The GNU build id of an ELF file, or "" */
static void file_build_id(const char *path, char id[ELF_BUILD_ID_HEX_CAP])
{
	id[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 64) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			struct elf_image img;
			if (elf_open(&img, p, (size_t)st.st_size) &&
			    !elf_build_id_hex(&img, id, ELF_BUILD_ID_HEX_CAP))
				id[0] = 0;
			munmap(p, (size_t)st.st_size);
		}
	}
	close(fd);
}

/* Every ELF file with a build id under the store's directories (explicit
 * stack of directories, bounded depth and count). */
static void scan_dirs(struct debug_store *ds)
{
	struct pending {
		char *path;
		int depth;
	} *stack = NULL;
	size_t n = 0, cap = 0, files = 0;
	ds->scanned = 1;
	for (size_t i = 0; i < ds->n_dirs; i++) {
		stack = xgrow(stack, &cap, n + 1, sizeof(*stack));
		stack[n].path = xstrndup(ds->dirs[i], strlen(ds->dirs[i]));
		stack[n++].depth = 0;
	}
	while (n > 0 && files < SCAN_MAX_FILES) {
		struct pending cur = stack[--n];
		DIR *d = opendir(cur.path);
		struct dirent *de;
		while (d != NULL && (de = readdir(d)) != NULL && files < SCAN_MAX_FILES) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			size_t len = strlen(cur.path) + strlen(de->d_name) + 2;
			char *path = xmalloc(len);
			snprintf(path, len, "%s/%s", cur.path, de->d_name);
			struct stat st;
			if (stat(path, &st) != 0) {
				free(path);
				continue;
			}
			if (S_ISDIR(st.st_mode) && cur.depth + 1 < SCAN_MAX_DEPTH) {
				stack = xgrow(stack, &cap, n + 1, sizeof(*stack));
				stack[n].path = path;
				stack[n++].depth = cur.depth + 1;
				continue;
			}
			files++;
			struct found_file f = {{0}, NULL};
			file_build_id(path, f.build_id);
			if (S_ISREG(st.st_mode) && f.build_id[0]) {
				f.path = path;
				ds->found = xgrow(ds->found, &ds->cap_found, ds->n_found + 1, sizeof(*ds->found));
				ds->found[ds->n_found++] = f;
			} else {
				free(path);
			}
		}
		if (d != NULL)
			closedir(d);
		free(cur.path);
	}
	while (n > 0)
		free(stack[--n].path);
	free(stack);
}

/* The debug information for a build id, found and opened on first use. */
static struct debuginfo *store_get(struct debug_store *ds, const char *build_id)
{
	for (size_t i = 0; i < ds->n_entries; i++)
		if (strcmp(ds->entries[i].build_id, build_id) == 0)
			return ds->entries[i].di;
	if (strlen(build_id) < 3 || strlen(build_id) >= ELF_BUILD_ID_HEX_CAP)
		return NULL;
	struct debuginfo *di = NULL;
	char path[4096];
	for (size_t i = 0; di == NULL && i < ds->n_dirs; i++) {
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", ds->dirs[i], build_id, build_id + 2);
		di = debuginfo_open_file(path, build_id, DEBUG_BUDGET);
	}
	if (di == NULL && !ds->scanned)
		scan_dirs(ds);
	for (size_t i = 0; di == NULL && i < ds->n_found; i++)
		if (strcmp(ds->found[i].build_id, build_id) == 0)
			di = debuginfo_open_file(ds->found[i].path, build_id, DEBUG_BUDGET);
	ds->entries = xgrow(ds->entries, &ds->cap_entries, ds->n_entries + 1, sizeof(*ds->entries));
	struct debug_entry *e = &ds->entries[ds->n_entries++];
	snprintf(e->build_id, sizeof(e->build_id), "%s", build_id);
	e->di = di;
	return di;
}

/* ---- adding strings and functions to a decoded profile ---- */

struct interner {
	struct pp_profile *p;
	size_t *str_slots, n_str_slots; /* string index + 1 */
	size_t *fn_slots, n_fn_slots;   /* function index + 1 */
	size_t caps_strings, caps_lens, caps_functions;
	uint64_t next_function_id;
	struct demangle_scratch *scratch;
	char *demangled;
};

static size_t str_hash(const char *s, size_t n) { return (size_t)hash_bytes(s, n, 0); }

static void str_rehash(struct interner *in)
{
	free(in->str_slots);
	in->n_str_slots = 1024;
	while (in->n_str_slots < 2 * in->p->n_strings + 2)
		in->n_str_slots *= 2;
	in->str_slots = xcalloc(in->n_str_slots, sizeof(size_t));
	for (size_t i = 0; i < in->p->n_strings; i++) {
		size_t h = str_hash(in->p->strings[i], in->p->string_lens[i]) & (in->n_str_slots - 1);
		while (in->str_slots[h])
			h = (h + 1) & (in->n_str_slots - 1);
		in->str_slots[h] = i + 1;
	}
}

static uint64_t intern_string(struct interner *in, const char *s)
{
	struct pp_profile *p = in->p;
	size_t n = strlen(s);
	if (n == 0)
		return 0;
	if (in->str_slots == NULL || 2 * (p->n_strings + 1) > in->n_str_slots)
		str_rehash(in);
	size_t h = str_hash(s, n) & (in->n_str_slots - 1);
	while (in->str_slots[h]) {
		size_t i = in->str_slots[h] - 1;
		if (p->string_lens[i] == n && memcmp(p->strings[i], s, n) == 0)
			return i;
		h = (h + 1) & (in->n_str_slots - 1);
	}
	if (in->caps_strings < p->n_strings)
		in->caps_strings = p->n_strings;
	if (in->caps_lens < p->n_strings)
		in->caps_lens = p->n_strings;
	p->strings = xgrow(p->strings, &in->caps_strings, p->n_strings + 1, sizeof(*p->strings));
	p->string_lens = xgrow(p->string_lens, &in->caps_lens, p->n_strings + 1, sizeof(*p->string_lens));
	p->strings[p->n_strings] = xstrndup(s, n);
	p->string_lens[p->n_strings] = n;
	in->str_slots[h] = ++p->n_strings;
	return p->n_strings - 1;
}

static size_t fn_hash(uint64_t name, uint64_t file) { return (size_t)(name * 0x9e3779b97f4a7c15ull ^ file); }

static void fn_rehash(struct interner *in)
{
	free(in->fn_slots);
	in->n_fn_slots = 1024;
	while (in->n_fn_slots < 2 * in->p->n_functions + 2)
		in->n_fn_slots *= 2;
	in->fn_slots = xcalloc(in->n_fn_slots, sizeof(size_t));
	for (size_t i = 0; i < in->p->n_functions; i++) {
		const struct pp_function *f = &in->p->functions[i];
		size_t h = fn_hash(f->system_name, f->filename) & (in->n_fn_slots - 1);
		while (in->fn_slots[h])
			h = (h + 1) & (in->n_fn_slots - 1);
		in->fn_slots[h] = i + 1;
	}
}

/* The index of the function named `symbol` in `file` (NULL: unknown). */
static uint64_t intern_function(struct interner *in, const char *symbol, const char *file)
{
	struct pp_profile *p = in->p;
	uint64_t sys = intern_string(in, symbol);
	uint64_t fi = file != NULL ? intern_string(in, file) : 0;
	if (in->fn_slots == NULL || 2 * (p->n_functions + 1) > in->n_fn_slots)
		fn_rehash(in);
	size_t h = fn_hash(sys, fi) & (in->n_fn_slots - 1);
	while (in->fn_slots[h]) {
		const struct pp_function *f = &p->functions[in->fn_slots[h] - 1];
		if (f->system_name == sys && f->filename == fi)
			return in->fn_slots[h] - 1;
		h = (h + 1) & (in->n_fn_slots - 1);
	}
	uint64_t name = sys;
	if (demangle(symbol, in->demangled, DEMANGLED_CAP, in->scratch) > 0)
		name = intern_string(in, in->demangled);
	if (in->caps_functions < p->n_functions)
		in->caps_functions = p->n_functions;
	p->functions = xgrow(p->functions, &in->caps_functions, p->n_functions + 1, sizeof(*p->functions));
	struct pp_function *f = &p->functions[p->n_functions];
	memset(f, 0, sizeof(*f));
	f->id = in->next_function_id++;
	f->name = name;
	f->system_name = sys;
	f->filename = fi;
	in->fn_slots[h] = ++p->n_functions;
	return p->n_functions - 1;
}

/* ---- symbolizing one profile ---- */

static int needs_lines(const struct pp_location *l)
{
	if (l->n_lines == 0)
		return 1;
	for (size_t i = 0; i < l->n_lines; i++)
		if (l->lines[i].line <= 0)
			return 1;
	return 0;
}

void symbolize_profile(struct pp_profile *p, struct debug_store *ds, unsigned char *touched,
		       unsigned char *changed, struct symbolize_stats *st)
{
	struct interner in = {.p = p};
	in.scratch = xmalloc(sizeof(*in.scratch));
	in.demangled = xmalloc(DEMANGLED_CAP);
	for (size_t i = 0; i < p->n_functions; i++)
		if (p->functions[i].id >= in.next_function_id)
			in.next_function_id = p->functions[i].id + 1;
	if (in.next_function_id == 0)
		in.next_function_id = 1;
	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < p->n_locations; i++) {
		struct pp_location *loc = &p->locations[i];
		if (loc->mapping_id == 0)
			continue;
		const struct pp_mapping *m = &p->mappings[loc->mapping_id - 1];
		const char *bid = pp_str(p, m->build_id);
		if (!bid[0])
			continue;
		st->locations++;
		if (!needs_lines(loc) || loc->address < m->memory_start)
			continue;
		struct debuginfo *di = store_get(ds, bid);
		uint64_t vaddr;
		if (di == NULL ||
		    !debuginfo_mapping_vaddr(di, m->file_offset, loc->address - m->memory_start, &vaddr))
			continue;
		struct dwarf_frame fr[DWARF_MAX_FRAMES];
		uint32_t n = 0;
		if (debuginfo_lookup(di, vaddr, fr, &n) != DWARF_FOUND)
			n = 0;
		const char *sym = debuginfo_symbol(di, vaddr);
		if (n == 0 && sym == NULL)
			continue;
		size_t count = n ? n : 1;
		struct pp_line *lines = xcalloc(count, sizeof(*lines));
		for (size_t k = 0; k < count; k++) {
			const char *name = n ? fr[k].name : sym;
			/* The outermost frame: the symbol table's name, as the library writes it. */
			if (k == count - 1 && sym != NULL)
				name = sym;
			lines[k].function = intern_function(&in, name != NULL ? name : "??", n ? fr[k].file : NULL);
			lines[k].line = n ? fr[k].line : 0;
		}
		free(loc->lines);
		loc->lines = lines;
		loc->n_lines = count;
		if (touched != NULL)
			touched[loc->mapping_id - 1] = 1;
		if (changed != NULL)
			changed[i] = 1;
		st->symbolized++;
		st->inlined += count > 1;
	}
	free(in.str_slots);
	free(in.fn_slots);
	free(in.scratch);
	free(in.demangled);
}

void inputs_symbolize(struct input_set *set, char *const *dirs, size_t n_dirs)
{
	if (n_dirs == 0)
		return;
	struct debug_store *ds = debug_store_new(dirs, n_dirs);
	for (size_t i = 0; i < set->n; i++) {
		struct symbolize_stats st;
		symbolize_profile(&set->items[i].prof, ds, NULL, NULL, &st);
	}
	debug_store_free(ds);
}

/* ---- the command ---- */

static const char symbolize_usage[] =
	"usage: stowaway symbolize PROFILE... --debug-dir DIR... [-o OUT]\n"
	"fills function names, file:line and inlined frames into profiles written from\n"
	"stripped binaries, from debug files under DIR matched by build id\n"
	"(DIR/.build-id/xx/rest.debug, or any ELF file below DIR).  Writes OUT (one\n"
	"profile) or PROFILE with .symbolized.pb.gz in place of .pb.gz.\n";

/* The has_* flags a mapping deserves after symbolization. */
static void mapping_flags(const struct pp_profile *p, const unsigned char *touched, unsigned char *flags)
{
	unsigned char *all = xcalloc(p->n_mappings ? p->n_mappings : 1, 1);
	for (size_t i = 0; i < p->n_mappings; i++)
		all[i] = touched[i] ? 0x0f : 0;
	for (size_t i = 0; i < p->n_locations; i++) {
		const struct pp_location *l = &p->locations[i];
		if (l->mapping_id == 0 || !all[l->mapping_id - 1])
			continue;
		unsigned char *a = &all[l->mapping_id - 1];
		if (l->n_lines == 0)
			*a &= (unsigned char)~0x07u;
		for (size_t k = 0; k < l->n_lines; k++) {
			if (p->functions[l->lines[k].function].filename == 0)
				*a &= (unsigned char)~0x02u;
			if (l->lines[k].line <= 0)
				*a &= (unsigned char)~0x04u;
		}
	}
	memcpy(flags, all, p->n_mappings);
	free(all);
}

static int symbolize_file(const char *in_path, const char *out_path, struct debug_store *ds)
{
	struct cli_buf file = {0}, raw = {0}, out = {0};
	struct rt_buf packed = {0};
	struct pp_profile p;
	int rc = read_file(in_path, PPROF_MAX_DECODED, &file);
	if (rc == 0)
		rc = pprof_raw_bytes(file.data, file.len, &raw);
	if (rc == 0)
		rc = pprof_decode(raw.data, raw.len, &p);
	if (rc != 0) {
		fprintf(stderr, "stowaway: %s: %s\n", in_path, cli_err);
		buf_free(&file);
		buf_free(&raw);
		return 1;
	}
	struct pp_rewrite rw = {.old_strings = p.n_strings, .old_functions = p.n_functions};
	unsigned char *touched = xcalloc(p.n_mappings + 1, 1);
	unsigned char *flags = xcalloc(p.n_mappings + 1, 1);
	unsigned char *changed = xcalloc(p.n_locations + 1, 1);
	struct symbolize_stats st;
	symbolize_profile(&p, ds, touched, changed, &st);
	mapping_flags(&p, touched, flags);
	rw.location_changed = changed;
	rw.mapping_flags = flags;
	rc = pprof_rewrite(raw.data, raw.len, &p, &rw, &out);
	if (rc == 0 && gz_compress(out.data, out.len, GZ_LEVEL_DEFAULT, &packed) != 0)
		rc = cli_fail("cannot compress the profile");
	if (rc == 0)
		rc = write_file_atomic(out_path, packed.data, packed.len, 0644);
	if (rc == 0)
		printf("%s: %zu of %zu locations symbolized (%zu with inlined frames) -> %s\n", in_path,
		       st.symbolized, st.locations, st.inlined, out_path);
	else
		fprintf(stderr, "stowaway: %s: %s\n", in_path, cli_err);
	free(touched);
	free(flags);
	free(changed);
	pprof_free(&p);
	buf_free(&file);
	buf_free(&raw);
	buf_free(&out);
	rt_buf_free(&packed);
	return rc == 0 ? 0 : 1;
}

int cmd_symbolize(int argc, char **argv)
{
	char **paths = xcalloc((size_t)argc + 1, sizeof(char *));
	char **dirs = xcalloc((size_t)argc + 1, sizeof(char *));
	size_t n_paths = 0, n_dirs = 0;
	const char *output = NULL;
	for (int i = 0; i < argc; i++) {
		if ((strcmp(argv[i], "--debug-dir") == 0 || strcmp(argv[i], "-o") == 0) && i + 1 >= argc) {
			fprintf(stderr, "stowaway: %s needs a value\n%s", argv[i], symbolize_usage);
			free(paths);
			free(dirs);
			return 2;
		}
		if (strcmp(argv[i], "--debug-dir") == 0)
			dirs[n_dirs++] = argv[++i];
		else if (strncmp(argv[i], "--debug-dir=", 12) == 0)
			dirs[n_dirs++] = argv[i] + 12;
		else if (strcmp(argv[i], "-o") == 0)
			output = argv[++i];
		else
			paths[n_paths++] = argv[i];
	}
	if (n_paths == 0 || n_dirs == 0 || (output != NULL && n_paths != 1)) {
		fputs(symbolize_usage, stderr);
		free(paths);
		free(dirs);
		return 2;
	}
	struct debug_store *ds = debug_store_new(dirs, n_dirs);
	int status = 0;
	for (size_t i = 0; i < n_paths; i++) {
		char *out = NULL;
		if (output == NULL) {
			size_t len = strlen(paths[i]);
			const char *suffix = len > 6 && strcmp(paths[i] + len - 6, ".pb.gz") == 0 ? ".pb.gz" : "";
			size_t stem = len - strlen(suffix);
			out = xmalloc(stem + 32);
			snprintf(out, stem + 32, "%.*s.symbolized.pb.gz", (int)stem, paths[i]);
		}
		status |= symbolize_file(paths[i], output != NULL ? output : out, ds);
		free(out);
	}
	debug_store_free(ds);
	free(paths);
	free(dirs);
	return status;
}
