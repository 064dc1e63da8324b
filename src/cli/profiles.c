/* Inputs: files and directories of profiles, grouped by kind, filtered
 * into stack sets. */
#include "cli/profiles.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/util.h"
#include "demangle/demangle.h"

/* Profile files larger than this are refused (compressed size). */
#define MAX_INPUT_FILE ((size_t)1 << 30)
#define MAX_DIR_DEPTH 16
#define MAX_FOLDED_DEPTH 4096

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int is_folded_path(const char *path)
{
	return has_suffix(path, ".folded") || has_suffix(path, ".collapsed") || has_suffix(path, ".txt");
}

static int is_profile_name(const char *name)
{
	static const char *const suffixes[] = {".pb.gz", ".pb", ".pprof", ".prof", ".folded", ".collapsed"};
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if (has_suffix(name, suffixes[i]))
			return 1;
	return 0;
}

static int parse_int64(const char *s, size_t len, int64_t *out)
{
	if (len == 0 || len > 20)
		return -1;
	char tmp[24];
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	char *end;
	errno = 0;
	long long v = strtoll(tmp, &end, 10);
	if (errno != 0 || *end != '\0' || end == tmp)
		return -1;
	*out = (int64_t)v;
	return 0;
}

int folded_parse(const char *path, const char *text, size_t len, struct pp_profile *out)
{
	struct pp_encoder *e = pp_encoder_new("samples", "count", 0);
	const char **frames = xcalloc(MAX_FOLDED_DEPTH, sizeof(*frames));
	char *line_copy = NULL;
	size_t pos = 0, line_no = 0;
	int rc = 0;
	while (rc == 0 && pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t line_len = nl ? (size_t)(nl - (text + pos)) : len - pos;
		const char *line = text + pos;
		pos += line_len + (nl ? 1 : 0);
		line_no++;
		if (line_len > 0 && line[line_len - 1] == '\r')
			line_len--;
		if (line_len == 0 || line[0] == '#')
			continue;
		const char *space = NULL;
		for (size_t i = line_len; i > 0; i--)
			if (line[i - 1] == ' ') {
				space = line + i - 1;
				break;
			}
		int64_t value;
		if (!space || space == line ||
		    parse_int64(space + 1, line_len - (size_t)(space + 1 - line), &value) != 0 || value < 0) {
			rc = cli_fail("%s:%zu: expected \"frame;frame;... value\"", path, line_no);
			break;
		}
		free(line_copy);
		line_copy = xstrndup(line, (size_t)(space - line));
		/* Split into frames root first, then hand them over leaf first. */
		size_t depth = 0;
		char *save = NULL;
		for (char *tok = strtok_r(line_copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			if (depth == MAX_FOLDED_DEPTH) {
				rc = cli_fail("%s:%zu: more than %d frames", path, line_no, MAX_FOLDED_DEPTH);
				break;
			}
			frames[depth++] = tok;
		}
		if (rc != 0)
			break;
		for (size_t i = 0; i < depth / 2; i++) {
			const char *t = frames[i];
			frames[i] = frames[depth - 1 - i];
			frames[depth - 1 - i] = t;
		}
		pp_encoder_add(e, frames, depth, value);
	}
	free(line_copy);
	free(frames);
	struct cli_buf raw = {0};
	pp_encoder_finish(e, 0, &raw);
	if (rc == 0)
		rc = pprof_decode(raw.data, raw.len, out);
	else
		memset(out, 0, sizeof(*out));
	buf_free(&raw);
	return rc;
}

static char *kind_of(const struct pp_profile *p)
{
	struct cli_buf b = {0};
	for (size_t i = 0; i < p->n_sample_types; i++)
		buf_printf(&b, "%s%s/%s", i ? "," : "", pp_str(p, p->sample_types[i].type),
			   pp_str(p, p->sample_types[i].unit));
	buf_append(&b, "", 1);
	return (char *)b.data;
}

static int load_file(struct input_set *set, const char *path)
{
	struct cli_buf data = {0};
	if (read_file(path, MAX_INPUT_FILE, &data) != 0) {
		buf_free(&data);
		return -1;
	}
	struct pp_profile prof;
	int rc;
	if (is_folded_path(path))
		rc = folded_parse(path, (const char *)data.data, data.len, &prof);
	else
		rc = pprof_decode_any(data.data, data.len, &prof);
	buf_free(&data);
	if (rc != 0) {
		if (!is_folded_path(path)) {
			char msg[CLI_ERR_SIZE];
			snprintf(msg, sizeof(msg), "%s", cli_err);
			return cli_fail("%s: %s", path, msg);
		}
		return -1;
	}
	set->items = xgrow(set->items, &set->cap, set->n + 1, sizeof(*set->items));
	struct input *in = &set->items[set->n++];
	in->path = xstrndup(path, strlen(path));
	in->prof = prof;
	in->kind = kind_of(&in->prof);
	return 0;
}

static int cmp_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists one directory: profile files are loaded (sorted by name),
 * subdirectories are appended to the work list. */
struct dir_work {
	char *path;
	unsigned depth;
};

static int scan_dir(struct input_set *set, const struct dir_work *dir, struct dir_work **work,
		    size_t *n_work, size_t *work_cap)
{
	DIR *d = opendir(dir->path);
	if (!d)
		return cli_fail("%s: %s", dir->path, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *ent;
	while ((ent = readdir(d)) != NULL) {
		if (ent->d_name[0] == '.')
			continue;
		names = xgrow(names, &cap, n + 1, sizeof(*names));
		names[n++] = xstrndup(ent->d_name, strlen(ent->d_name));
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), cmp_strings);
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(dir->path) + strlen(names[i]) + 2;
		char *full = xmalloc(len);
		snprintf(full, len, "%s/%s", dir->path, names[i]);
		struct stat st;
		if (rc == 0 && stat(full, &st) == 0) {
			if (S_ISDIR(st.st_mode) && dir->depth + 1 < MAX_DIR_DEPTH) {
				*work = xgrow(*work, work_cap, *n_work + 1, sizeof(**work));
				(*work)[(*n_work)++] = (struct dir_work){.path = full, .depth = dir->depth + 1};
				full = NULL;
			} else if (S_ISREG(st.st_mode) && is_profile_name(names[i])) {
				rc = load_file(set, full);
			}
		}
		free(full);
		free(names[i]);
	}
	free(names);
	return rc;
}

static int load_dir(struct input_set *set, const char *path)
{
	struct dir_work *work = xcalloc(1, sizeof(*work));
	size_t n_work = 1, work_cap = 1, next = 0;
	work[0] = (struct dir_work){.path = xstrndup(path, strlen(path)), .depth = 0};
	int rc = 0;
	while (rc == 0 && next < n_work) {
		struct dir_work dir = work[next++];
		rc = scan_dir(set, &dir, &work, &n_work, &work_cap);
	}
	for (size_t i = 0; i < n_work; i++)
		free(work[i].path);
	free(work);
	return rc;
}

int inputs_load(struct input_set *set, char *const *paths, size_t n_paths)
{
	for (size_t i = 0; i < n_paths; i++) {
		struct stat st;
		if (stat(paths[i], &st) != 0)
			return cli_fail("%s: %s", paths[i], strerror(errno));
		size_t before = set->n;
		int rc = S_ISDIR(st.st_mode) ? load_dir(set, paths[i]) : load_file(set, paths[i]);
		if (rc != 0)
			return -1;
		if (S_ISDIR(st.st_mode) && set->n == before)
			return cli_fail("%s: no profile files (*.pb.gz, *.pprof, *.folded, ...)", paths[i]);
	}
	return 0;
}

void inputs_free(struct input_set *set)
{
	for (size_t i = 0; i < set->n; i++) {
		free(set->items[i].path);
		free(set->items[i].kind);
		pprof_free(&set->items[i].prof);
	}
	free(set->items);
	memset(set, 0, sizeof(*set));
}

size_t inputs_kinds(const struct input_set *set, const char ***kinds)
{
	*kinds = xcalloc(set->n, sizeof(**kinds));
	size_t n = 0;
	for (size_t i = 0; i < set->n; i++) {
		size_t j = 0;
		while (j < n && strcmp((*kinds)[j], set->items[i].kind) != 0)
			j++;
		if (j == n)
			(*kinds)[n++] = set->items[i].kind;
	}
	return n;
}

/* Index of the sample type to use, or -1 when the profile has none matching. */
static long sample_type_index(const struct pp_profile *p, const char *wanted)
{
	if (wanted) {
		char *end;
		errno = 0;
		unsigned long n = strtoul(wanted, &end, 10);
		if (*wanted >= '0' && *wanted <= '9' && *end == '\0' && errno == 0)
			return n < p->n_sample_types ? (long)n : -1;
		for (size_t i = 0; i < p->n_sample_types; i++)
			if (strcmp(pp_str(p, p->sample_types[i].type), wanted) == 0)
				return (long)i;
		return -1;
	}
	const char *def = pp_str(p, p->default_sample_type);
	if (def[0])
		for (size_t i = 0; i < p->n_sample_types; i++)
			if (strcmp(pp_str(p, p->sample_types[i].type), def) == 0)
				return (long)i;
	return (long)p->n_sample_types - 1;
}

static int label_matches(const struct pp_profile *p, const struct pp_label *l, const char *key,
			 const char *value)
{
	if (strcmp(pp_str(p, l->key), key) != 0)
		return 0;
	if (l->str != 0)
		return strcmp(pp_str(p, l->str), value) == 0;
	int64_t num;
	return parse_int64(value, strlen(value), &num) == 0 && num == l->num;
}

static int sample_passes(const struct pp_profile *p, const struct pp_sample *s, const struct filters *f)
{
	if (f->thread) {
		int found = 0;
		for (size_t i = 0; i < s->n_labels && !found; i++)
			found = label_matches(p, &s->labels[i], "thread name", f->thread) ||
				label_matches(p, &s->labels[i], "thread id", f->thread);
		if (!found)
			return 0;
	}
	for (size_t t = 0; t < f->n_tags; t++) {
		const char *eq = strchr(f->tags[t], '=');
		char *key = xstrndup(f->tags[t], (size_t)(eq - f->tags[t]));
		int found = 0;
		for (size_t i = 0; i < s->n_labels && !found; i++)
			found = label_matches(p, &s->labels[i], key, eq + 1);
		free(key);
		if (!found)
			return 0;
	}
	return 1;
}

/* Name ids of each location's frames, leaf (innermost inline) first. */
struct location_frames {
	uint32_t *ids;   /* all frames, by location, concatenated */
	size_t *start;   /* n_locations + 1 offsets into ids */
};

static void location_frames_build(const struct pp_profile *p, struct name_table *names,
				  struct location_frames *lf)
{
	size_t total = 0;
	for (size_t i = 0; i < p->n_locations; i++)
		total += p->locations[i].n_lines ? p->locations[i].n_lines : 1;
	lf->ids = xcalloc(total, sizeof(*lf->ids));
	lf->start = xcalloc(p->n_locations + 1, sizeof(*lf->start));
	size_t k = 0;
	for (size_t i = 0; i < p->n_locations; i++) {
		const struct pp_location *loc = &p->locations[i];
		lf->start[i] = k;
		if (loc->n_lines == 0) {
			/* Unsymbolized: its binary and file offset (what a symbolizer
			 * needs later), "libc.so.6+0x1234". */
			char label[256];
			const struct pp_mapping *m = loc->mapping_id ? &p->mappings[loc->mapping_id - 1] : NULL;
			const char *file = m ? pp_str(p, m->filename) : "";
			const char *base = strrchr(file, '/');
			base = base ? base + 1 : file;
			if (base[0] && m && loc->address >= m->memory_start) {
				uint64_t file_offset = loc->address - m->memory_start + m->file_offset;
				snprintf(label, sizeof(label), "%s+0x%llx", base, (unsigned long long)file_offset);
			} else {
				snprintf(label, sizeof(label), base[0] ? "[%s]" : "<unknown>", base);
			}
			lf->ids[k++] = names_intern(names, label);
			continue;
		}
		for (size_t j = 0; j < loc->n_lines; j++) {
			const struct pp_function *fn = &p->functions[loc->lines[j].function];
			const char *name = pp_str(p, fn->name);
			if (!name[0])
				name = pp_str(p, fn->system_name);
			if (!name[0])
				name = "?";
			/* Profiles from other writers may carry mangled names. */
			static struct demangle_scratch scratch;
			char readable[1024];
			if (demangle_has_prefix(name) &&
			    demangle(name, readable, sizeof(readable), &scratch) > 0)
				name = readable;
			lf->ids[k++] = names_intern(names, name);
		}
	}
	lf->start[p->n_locations] = k;
}

/* Focus regex results by name id: 0 not yet tested, 1 match, 2 no match. */
struct focus_cache {
	unsigned char *state;
	size_t cap;
};

static int focus_matches(const struct filters *f, struct focus_cache *fc, const struct name_table *names,
			 const uint32_t *frames, size_t depth)
{
	for (size_t i = 0; i < depth; i++) {
		uint32_t id = frames[i];
		if (id >= fc->cap) {
			size_t old = fc->cap;
			fc->state = xgrow(fc->state, &fc->cap, (size_t)id + 1, 1);
			memset(fc->state + old, 0, fc->cap - old);
		}
		if (fc->state[id] == 0)
			fc->state[id] = regexec(&f->focus, names->names[id], 0, NULL, 0) == 0 ? 1 : 2;
		if (fc->state[id] == 1)
			return 1;
	}
	return 0;
}

static void add_profile(const struct pp_profile *p, size_t type_index, const struct filters *f,
			struct focus_cache *fc, struct selection *out)
{
	struct location_frames lf;
	location_frames_build(p, &out->stacks.names, &lf);
	uint32_t *frames = NULL;
	size_t frames_cap = 0;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct pp_sample *s = &p->samples[i];
		if (!sample_passes(p, s, f))
			continue;
		size_t depth = 0;
		for (size_t j = 0; j < s->n_locations; j++) {
			uint64_t loc = s->locations[j];
			size_t n = lf.start[loc + 1] - lf.start[loc];
			frames = xgrow(frames, &frames_cap, depth + n, sizeof(*frames));
			memcpy(frames + depth, lf.ids + lf.start[loc], n * sizeof(*frames));
			depth += n;
		}
		for (size_t j = 0; j < depth / 2; j++) { /* root first */
			uint32_t t = frames[j];
			frames[j] = frames[depth - 1 - j];
			frames[depth - 1 - j] = t;
		}
		if (f->has_focus && !focus_matches(f, fc, &out->stacks.names, frames, depth))
			continue;
		stacks_add(&out->stacks, frames, depth, s->values[type_index]);
	}
	free(frames);
	free(lf.ids);
	free(lf.start);
}

int select_kind(const struct input_set *set, const char *kind, const struct filters *f,
		struct selection *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	struct focus_cache fc = {0};
	long type_index = -1;
	for (size_t i = 0; i < set->n; i++) {
		const struct input *in = &set->items[i];
		if (strcmp(in->kind, kind) != 0)
			continue;
		if (type_index < 0) {
			type_index = sample_type_index(&in->prof, f->sample_index);
			if (type_index < 0)
				return 1;
			out->type = pp_str(&in->prof, in->prof.sample_types[type_index].type);
			out->unit = pp_str(&in->prof, in->prof.sample_types[type_index].unit);
		}
		out->n_profiles++;
		int64_t t = in->prof.time_nanos;
		if ((f->has_since && t < f->since_ns) || (f->has_until && t >= f->until_ns))
			continue;
		if (out->n_in_window == 0 || t < out->time_min)
			out->time_min = t;
		if (out->n_in_window == 0 || t > out->time_max)
			out->time_max = t;
		out->n_in_window++;
		out->duration += in->prof.duration_nanos;
		add_profile(&in->prof, (size_t)type_index, f, &fc, out);
	}
	free(fc.state);
	return 0;
}

/* The sample type tools show first for a profile, or "?" when it has none. */
static const char *main_type_name(const struct pp_profile *p)
{
	long i = sample_type_index(p, NULL);
	return i < 0 ? "?" : pp_str(p, p->sample_types[i].type);
}

/* The first profile of a kind. */
static const struct pp_profile *kind_profile(const struct input_set *set, const char *kind)
{
	for (size_t j = 0; j < set->n; j++)
		if (strcmp(set->items[j].kind, kind) == 0)
			return &set->items[j].prof;
	return NULL;
}

/* The one kind holding a CPU sample type ("cpu-time" from stowaway and
 * Datadog's profilers, "cpu" from Go's runtime/pprof), or NULL. */
static const char *cpu_kind(const struct input_set *set, const char **kinds, size_t n)
{
	const char *found = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct pp_profile *p = kind_profile(set, kinds[i]);
		if (sample_type_index(p, "cpu-time") < 0 && sample_type_index(p, "cpu") < 0)
			continue;
		if (found)
			return NULL;
		found = kinds[i];
	}
	return found;
}

int select_single(const struct input_set *set, const struct filters *f, struct selection *out)
{
	const char **kinds;
	size_t n = inputs_kinds(set, &kinds);
	const char *chosen = NULL;
	size_t matching = 0;
	struct cli_buf list = {0};
	for (size_t i = 0; i < n; i++) {
		const struct input *first = NULL;
		for (size_t j = 0; j < set->n && !first; j++)
			if (strcmp(set->items[j].kind, kinds[i]) == 0)
				first = &set->items[j];
		buf_printf(&list, "%s%s", i ? "; " : "", kinds[i]);
		if (sample_type_index(&first->prof, f->sample_index) >= 0) {
			chosen = kinds[i];
			matching++;
		}
	}
	buf_append(&list, "", 1);
	int rc = 0;
	if (matching > 1 && !f->sample_index) {
		/* Several kinds (a directory of the default kinds): the CPU profile,
		 * as the user is told on stderr. */
		const char *cpu = cpu_kind(set, kinds, n);
		if (cpu) {
			struct cli_buf others = {0};
			for (size_t i = 0; i < n; i++) {
				const struct pp_profile *p = kind_profile(set, kinds[i]);
				if (kinds[i] != cpu)
					buf_printf(&others, "%s%s", others.len ? ", " : "", main_type_name(p));
			}
			buf_append(&others, "", 1);
			const struct pp_profile *p = kind_profile(set, cpu);
			fprintf(stderr, "stowaway: note: the inputs hold %zu kinds of profile; showing %s "
				"(the others: --sample-index %s)\n", matching, main_type_name(p),
				(char *)others.data);
			buf_free(&others);
			chosen = cpu;
			matching = 1;
		}
	}
	if (matching == 0 && f->sample_index)
		rc = cli_fail("no profile has sample type \"%s\" (kinds: %s)", f->sample_index, (char *)list.data);
	else if (matching != 1)
		rc = cli_fail("the inputs hold %zu kinds of profile (%s); pick one with --sample-index TYPE",
			      matching, (char *)list.data);
	if (rc == 0)
		rc = select_kind(set, chosen, f, out);
	free(kinds);
	buf_free(&list);
	return rc;
}

void selection_free(struct selection *s)
{
	stacks_free(&s->stacks);
	memset(s, 0, sizeof(*s));
}
