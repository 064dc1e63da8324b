/* report, diff, folded and convert: tables and text from stack sets. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/symbolize.h"
#include "cli/util.h"

static int fail_exit(void)
{
	fprintf(stderr, "stowaway: %s\n", cli_err);
	return 1;
}

static double share(int64_t part, int64_t total)
{
	return total ? 100.0 * (double)part / (double)total : 0.0;
}

static void format_time(char *out, size_t size, int64_t ns)
{
	time_t secs = (time_t)(ns / 1000000000);
	struct tm tm;
	if (ns <= 0 || !gmtime_r(&secs, &tm) || strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, size, "unknown time");
}

/* Function rows sorted for the tables: by value, then name (as pprof). */
struct fn_row {
	uint32_t name;
	int64_t flat, cum;
};

static const struct name_table *row_names;
static int rows_by_cum;

static int cmp_rows(const void *a, const void *b)
{
	const struct fn_row *x = a, *y = b;
	int64_t kx = rows_by_cum ? x->cum : x->flat, ky = rows_by_cum ? y->cum : y->flat;
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(row_names->names[x->name], row_names->names[y->name]);
}

static void print_report(const struct selection *sel, const struct cli_opts *o)
{
	char t0[32], t1[32], total[32], flat_s[32], cum_s[32];
	format_time(t0, sizeof(t0), sel->time_min);
	format_time(t1, sizeof(t1), sel->time_max);
	format_value(total, sizeof(total), sel->stacks.total, sel->unit, o->raw);
	printf("kind: %s\n", sel->kind);
	printf("profiles: %zu of %zu in the time window, %s .. %s\n", sel->n_in_window, sel->n_profiles, t0, t1);
	printf("sample type: %s (%s), total %s\n", sel->type, sel->unit, total);
	int64_t *flat, *cum;
	stacks_function_totals(&sel->stacks, &flat, &cum);
	size_t n = 0;
	struct fn_row *rows = xcalloc(sel->stacks.names.n, sizeof(*rows));
	for (uint32_t i = 0; i < sel->stacks.names.n; i++)
		if (flat[i] != 0 || cum[i] != 0)
			rows[n++] = (struct fn_row){.name = i, .flat = flat[i], .cum = cum[i]};
	row_names = &sel->stacks.names;
	rows_by_cum = o->cum;
	qsort(rows, n, sizeof(*rows), cmp_rows);
	size_t shown = o->top > 0 && (size_t)o->top < n ? (size_t)o->top : n;
	printf("%12s %7s %7s %12s %7s  %s\n", "flat", "flat%", "sum%", "cum", "cum%", "function");
	double running = 0;
	for (size_t i = 0; i < shown; i++) {
		format_value(flat_s, sizeof(flat_s), rows[i].flat, sel->unit, o->raw);
		format_value(cum_s, sizeof(cum_s), rows[i].cum, sel->unit, o->raw);
		running += share(rows[i].flat, sel->stacks.total);
		printf("%12s %6.2f%% %6.2f%% %12s %6.2f%%  %s\n", flat_s, share(rows[i].flat, sel->stacks.total),
		       running, cum_s, share(rows[i].cum, sel->stacks.total), sel->stacks.names.names[rows[i].name]);
	}
	if (shown < n)
		printf("(%zu more functions; --top 0 shows all)\n", n - shown);
	free(rows);
	free(flat);
	free(cum);
}

static int load(const struct cli_opts *o, struct input_set *set)
{
	memset(set, 0, sizeof(*set));
	int rc = inputs_load(set, o->paths, o->n_paths);
	if (rc == 0)
		inputs_symbolize(set, o->filters.debug_dirs, o->filters.n_debug_dirs);
	return rc;
}

/* The comment a memory-triggered export carries (see collect/memguard.h). */
#define MEMORY_TRIGGER_PREFIX "memory trigger:"

static const char *memory_trigger_comment(const struct pp_profile *p)
{
	for (size_t i = 0; i < p->n_comments; i++) {
		const char *c = pp_str(p, p->comments[i]);
		if (strncmp(c, MEMORY_TRIGGER_PREFIX, sizeof(MEMORY_TRIGGER_PREFIX) - 1) == 0)
			return c;
	}
	return NULL;
}

/* Points out the newest profile exported because memory neared its limit
 * (a heap profile when there is one): what a post-mortem opens first. */
static void print_memory_trigger(const struct input_set *set)
{
	const struct input *best = NULL;
	size_t count = 0;
	for (size_t i = 0; i < set->n; i++) {
		const struct input *in = &set->items[i];
		if (!memory_trigger_comment(&in->prof))
			continue;
		count++;
		bool heap = strstr(in->kind, "heap-live") != NULL;
		bool best_heap = best && strstr(best->kind, "heap-live") != NULL;
		if (!best || in->prof.time_nanos > best->prof.time_nanos ||
		    (in->prof.time_nanos == best->prof.time_nanos && heap && !best_heap))
			best = in;
	}
	if (!best)
		return;
	char when[32];
	format_time(when, sizeof(when), best->prof.time_nanos);
	printf("\n%zu profile files come from memory-triggered exports; the newest: %s (%s)\n  %s\n",
	       count, best->path,
	       when, memory_trigger_comment(&best->prof));
	printf("  see it alone with: stowaway report %s\n", best->path);
}

int cmd_report(int argc, char **argv)
{
	struct cli_opts o;
	struct input_set set;
	int rc = parse_opts(argc, argv, OPT_FILTERS | OPT_TOP, &o);
	if (rc == 0 && o.n_paths == 0)
		rc = cli_fail("report needs at least one profile file or directory");
	if (rc == 0)
		rc = load(&o, &set);
	if (rc != 0) {
		free_opts(&o);
		return fail_exit();
	}
	const char **kinds;
	size_t n_kinds = inputs_kinds(&set, &kinds);
	size_t printed = 0;
	for (size_t k = 0; k < n_kinds && rc == 0; k++) {
		struct selection sel;
		int r = select_kind(&set, kinds[k], &o.filters, &sel);
		if (r < 0)
			rc = -1;
		if (r == 0) {
			if (printed++)
				printf("\n");
			print_report(&sel, &o);
		}
		selection_free(&sel);
	}
	if (rc == 0 && printed == 0)
		rc = cli_fail("no profile has sample type \"%s\"", o.filters.sample_index);
	if (rc == 0)
		print_memory_trigger(&set);
	free(kinds);
	inputs_free(&set);
	free_opts(&o);
	return rc == 0 ? 0 : fail_exit();
}

/* ---- diff ---- */

struct diff_row {
	const char *name;
	int64_t base, new_value;
	double delta_share; /* percentage points */
};

static int cmp_diff_grew(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	if (x->delta_share != y->delta_share)
		return x->delta_share > y->delta_share ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void print_diff_rows(const struct diff_row *rows, size_t n, const char *unit, const struct cli_opts *o,
			    double base_total, double new_total)
{
	char b[32], nv[32];
	size_t limit = o->top > 0 && (size_t)o->top < n ? (size_t)o->top : n;
	for (size_t i = 0; i < limit; i++) {
		format_value(b, sizeof(b), rows[i].base, unit, o->raw);
		format_value(nv, sizeof(nv), rows[i].new_value, unit, o->raw);
		printf("  %+8.2fpp %7.2f%% -> %6.2f%% %12s -> %-12s %s\n", rows[i].delta_share,
		       base_total ? 100.0 * (double)rows[i].base / base_total : 0.0,
		       new_total ? 100.0 * (double)rows[i].new_value / new_total : 0.0, b, nv, rows[i].name);
	}
	if (limit < n)
		printf("  (%zu more)\n", n - limit);
}

static void print_diff(const struct selection *base, const struct selection *cur, const struct cli_opts *o)
{
	int64_t *bflat, *bcum, *nflat, *ncum;
	stacks_function_totals(&base->stacks, &bflat, &bcum);
	stacks_function_totals(&cur->stacks, &nflat, &ncum);
	const int64_t *bv = o->cum ? bcum : bflat, *nv = o->cum ? ncum : nflat;
	/* One table of the names of both sides pairs them up. */
	struct name_table all = {0};
	size_t cap = base->stacks.names.n + cur->stacks.names.n;
	int64_t *base_of = xcalloc(cap, sizeof(*base_of)), *new_of = xcalloc(cap, sizeof(*new_of));
	for (size_t i = 0; i < base->stacks.names.n; i++)
		base_of[names_intern(&all, base->stacks.names.names[i])] += bv[i];
	for (size_t i = 0; i < cur->stacks.names.n; i++)
		new_of[names_intern(&all, cur->stacks.names.names[i])] += nv[i];
	double bt = (double)base->stacks.total, nt = (double)cur->stacks.total;
	size_t n = all.n;
	struct diff_row *rows = xcalloc(n, sizeof(*rows));
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct diff_row){.name = all.names[i], .base = base_of[i], .new_value = new_of[i]};
	size_t n_grew = 0, n_shrank = 0;
	struct diff_row *grew = xcalloc(n, sizeof(*grew)), *shrank = xcalloc(n, sizeof(*shrank));
	for (size_t i = 0; i < n; i++) {
		double bs = bt ? 100.0 * (double)rows[i].base / bt : 0.0;
		double ns = nt ? 100.0 * (double)rows[i].new_value / nt : 0.0;
		rows[i].delta_share = ns - bs;
		if (rows[i].delta_share > 0)
			grew[n_grew++] = rows[i];
		else if (rows[i].delta_share < 0)
			shrank[n_shrank++] = rows[i];
	}
	qsort(grew, n_grew, sizeof(*grew), cmp_diff_grew);
	qsort(shrank, n_shrank, sizeof(*shrank), cmp_diff_grew);
	for (size_t i = 0; i < n_shrank / 2; i++) { /* most shrunk first */
		struct diff_row t = shrank[i];
		shrank[i] = shrank[n_shrank - 1 - i];
		shrank[n_shrank - 1 - i] = t;
	}
	char bts[32], nts[32];
	format_value(bts, sizeof(bts), base->stacks.total, base->unit, o->raw);
	format_value(nts, sizeof(nts), cur->stacks.total, cur->unit, o->raw);
	printf("sample type: %s (%s), %s values\n", cur->type, cur->unit, o->cum ? "cumulative" : "flat");
	printf("base: %zu profiles, total %s\nnew:  %zu profiles, total %s\n", base->n_in_window, bts,
	       cur->n_in_window, nts);
	printf("grew (share change, base -> new share, base -> new value):\n");
	print_diff_rows(grew, n_grew, cur->unit, o, bt, nt);
	printf("shrank:\n");
	print_diff_rows(shrank, n_shrank, cur->unit, o, bt, nt);
	free(grew);
	free(shrank);
	free(rows);
	free(base_of);
	free(new_of);
	names_free(&all);
	free(bflat);
	free(bcum);
	free(nflat);
	free(ncum);
}

int cmd_diff(int argc, char **argv)
{
	struct cli_opts o;
	struct input_set base_set = {0}, new_set = {0};
	struct selection base = {0}, cur = {0};
	int rc = parse_opts(argc, argv, OPT_FILTERS | OPT_TOP, &o);
	if (rc == 0 && o.n_paths != 2)
		rc = cli_fail("diff needs exactly two inputs: BASE NEW (files or directories)");
	if (rc == 0)
		rc = inputs_load(&base_set, &o.paths[0], 1);
	if (rc == 0)
		rc = inputs_load(&new_set, &o.paths[1], 1);
	if (rc == 0) {
		inputs_symbolize(&base_set, o.filters.debug_dirs, o.filters.n_debug_dirs);
		inputs_symbolize(&new_set, o.filters.debug_dirs, o.filters.n_debug_dirs);
	}
	if (rc == 0)
		rc = select_single(&base_set, &o.filters, &base);
	if (rc == 0) {
		/* The new side must use the same sample type as the base. */
		struct filters f = o.filters;
		f.sample_index = base.type;
		rc = select_single(&new_set, &f, &cur);
	}
	if (rc == 0 && strcmp(base.unit, cur.unit) != 0)
		rc = cli_fail("BASE is in %s but NEW is in %s", base.unit, cur.unit);
	if (rc == 0)
		print_diff(&base, &cur, &o);
	selection_free(&base);
	selection_free(&cur);
	inputs_free(&base_set);
	inputs_free(&new_set);
	free_opts(&o);
	return rc == 0 ? 0 : fail_exit();
}

/* ---- folded and convert ---- */

/* ';' separates frames and newlines separate stacks: names keep neither. */
static void append_frame_name(struct cli_buf *out, const char *name)
{
	for (const char *p = name; *p; p++) {
		char c = *p == ';' ? ':' : (*p == '\n' || *p == '\r') ? ' ' : *p;
		buf_append(out, &c, 1);
	}
}

void write_folded(const struct selection *sel, struct cli_buf *out)
{
	size_t *order = stacks_sorted(&sel->stacks);
	for (size_t i = 0; i < sel->stacks.n_stacks; i++) {
		const struct stack *st = &sel->stacks.stacks[order[i]];
		if (st->value == 0 || st->depth == 0)
			continue;
		for (uint32_t d = 0; d < st->depth; d++) {
			if (d)
				buf_append(out, ";", 1);
			append_frame_name(out, sel->stacks.names.names[sel->stacks.frames[st->offset + d]]);
		}
		buf_printf(out, " %lld\n", (long long)st->value);
	}
	free(order);
}

static int write_output(const char *path, const struct cli_buf *data)
{
	if (!path || strcmp(path, "-") == 0) {
		if (data->len && fwrite(data->data, 1, data->len, stdout) != data->len)
			return cli_fail("writing to standard output failed");
		return fflush(stdout) == 0 ? 0 : cli_fail("writing to standard output failed");
	}
	return write_file_atomic(path, data->data, data->len, 0644);
}

int cmd_folded(int argc, char **argv)
{
	struct cli_opts o;
	struct input_set set = {0};
	struct selection sel = {0};
	int rc = parse_opts(argc, argv, OPT_FILTERS | OPT_OUTPUT, &o);
	if (rc == 0 && o.n_paths == 0)
		rc = cli_fail("folded needs at least one profile file or directory");
	if (rc == 0 && o.html)
		rc = cli_fail("folded does not take --html");
	if (rc == 0)
		rc = load(&o, &set);
	if (rc == 0)
		rc = select_single(&set, &o.filters, &sel);
	struct cli_buf out = {0};
	if (rc == 0) {
		write_folded(&sel, &out);
		rc = write_output(o.output, &out);
	}
	buf_free(&out);
	selection_free(&sel);
	inputs_free(&set);
	free_opts(&o);
	return rc == 0 ? 0 : fail_exit();
}

static void encode_pprof(const struct selection *sel, struct cli_buf *out)
{
	struct pp_encoder *e = pp_encoder_new(sel->type, sel->unit, sel->time_min);
	const char **frames = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < sel->stacks.n_stacks; i++) {
		const struct stack *st = &sel->stacks.stacks[i];
		frames = xgrow(frames, &cap, st->depth + 1, sizeof(*frames));
		for (uint32_t d = 0; d < st->depth; d++) /* leaf first */
			frames[d] = sel->stacks.names.names[sel->stacks.frames[st->offset + st->depth - 1 - d]];
		pp_encoder_add(e, frames, st->depth, st->value);
	}
	free(frames);
	pp_encoder_finish(e, 1, out);
}

int cmd_convert(int argc, char **argv)
{
	struct cli_opts o;
	struct input_set set = {0};
	struct selection sel = {0};
	int rc = parse_opts(argc, argv, OPT_FILTERS, &o);
	if (rc == 0 && o.n_paths != 2)
		rc = cli_fail("convert needs exactly two arguments: IN OUT");
	if (rc == 0 && is_folded_path(o.paths[0]) == is_folded_path(o.paths[1]))
		rc = cli_fail("convert: %s and %s have the same format (by extension: .folded/.txt/.collapsed "
			      "is folded, anything else pprof)",
			      o.paths[0], o.paths[1]);
	if (rc == 0)
		rc = inputs_load(&set, o.paths, 1);
	if (rc == 0)
		inputs_symbolize(&set, o.filters.debug_dirs, o.filters.n_debug_dirs);
	if (rc == 0)
		rc = select_single(&set, &o.filters, &sel);
	struct cli_buf out = {0};
	if (rc == 0) {
		if (is_folded_path(o.paths[1]))
			write_folded(&sel, &out);
		else
			encode_pprof(&sel, &out);
		rc = write_file_atomic(o.paths[1], out.data, out.len, 0644);
	}
	buf_free(&out);
	selection_free(&sel);
	inputs_free(&set);
	free_opts(&o);
	return rc == 0 ? 0 : fail_exit();
}
