/* Options shared by the analysis commands. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands.h"
#include "cli/util.h"

#define NS_PER_SEC 1000000000LL

static int parse_age(const char *s, int64_t now_ns, int64_t *out_ns)
{
	char *end;
	errno = 0;
	double amount = strtod(s, &end);
	if (errno != 0 || end == s || amount < 0 || amount > 1e7)
		return -1;
	double scale;
	if (strcmp(end, "s") == 0)
		scale = 1;
	else if (strcmp(end, "m") == 0)
		scale = 60;
	else if (strcmp(end, "h") == 0)
		scale = 3600;
	else if (strcmp(end, "d") == 0)
		scale = 86400;
	else
		return -1;
	*out_ns = now_ns - (int64_t)(amount * scale * (double)NS_PER_SEC);
	return 0;
}

/* Exactly `count` decimal digits at s. */
static int digits(const char *s, int count, int *out)
{
	int v = 0;
	for (int i = 0; i < count; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int parse_rfc3339(const char *s, int64_t *out_ns)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	/* YYYY-MM-DDTHH:MM:SS */
	if (strlen(s) < 19 || digits(s, 4, &tm.tm_year) != 0 || s[4] != '-' || digits(s + 5, 2, &tm.tm_mon) != 0 ||
	    s[7] != '-' || digits(s + 8, 2, &tm.tm_mday) != 0 || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    digits(s + 11, 2, &tm.tm_hour) != 0 || s[13] != ':' || digits(s + 14, 2, &tm.tm_min) != 0 ||
	    s[16] != ':' || digits(s + 17, 2, &tm.tm_sec) != 0)
		return -1;
	const int consumed = 19;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
	    tm.tm_min > 59 || tm.tm_sec > 60)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	const char *p = s + consumed;
	int64_t frac_ns = 0;
	if (*p == '.') {
		int64_t scale = NS_PER_SEC / 10;
		for (p++; isdigit((unsigned char)*p); p++) {
			frac_ns += (*p - '0') * scale;
			scale /= 10;
		}
	}
	int64_t offset_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm;
		if (digits(p + 1, 2, &hh) != 0 || p[3] != ':' || digits(p + 4, 2, &mm) != 0 || hh > 23 || mm > 59)
			return -1;
		offset_s = (int64_t)(hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
		p += 6;
	}
	if (*p != '\0')
		return -1;
	time_t t = timegm(&tm);
	*out_ns = ((int64_t)t - offset_s) * NS_PER_SEC + frac_ns;
	return 0;
}

int parse_time(const char *s, int64_t now_ns, int64_t *out_ns)
{
	char *end;
	errno = 0;
	double secs = strtod(s, &end);
	if (end != s && *end == '\0' && errno == 0 && secs >= 0 && secs < 1e11 && isdigit((unsigned char)s[0])) {
		*out_ns = (int64_t)(secs * (double)NS_PER_SEC);
		return 0;
	}
	if (parse_rfc3339(s, out_ns) == 0 || parse_age(s, now_ns, out_ns) == 0)
		return 0;
	return cli_fail("bad time \"%s\": use Unix seconds, RFC 3339 (2024-05-01T10:00:00Z) or an age (15m, 2h)", s);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_SEC + ts.tv_nsec;
}

/* Returns the option's value from "--opt=value" or the next argument. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	const char *arg = argv[*i];
	size_t n = strlen(name);
	if (arg[n] == '=') {
		*value = arg + n + 1;
		return 0;
	}
	if (*i + 1 >= argc)
		return cli_fail("%s needs a value", name);
	*value = argv[++*i];
	return 0;
}

static int is_option(const char *arg, const char *name)
{
	size_t n = strlen(name);
	return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_filter_option(int argc, char **argv, int *i, struct cli_opts *o, int *handled)
{
	const char *arg = argv[*i], *v;
	struct filters *f = &o->filters;
	*handled = 1;
	if (is_option(arg, "--sample-index")) {
		if (option_value(argc, argv, i, "--sample-index", &v) != 0)
			return -1;
		f->sample_index = v;
	} else if (is_option(arg, "--since") || is_option(arg, "--until")) {
		int since = is_option(arg, "--since");
		if (option_value(argc, argv, i, since ? "--since" : "--until", &v) != 0)
			return -1;
		if (parse_time(v, now_ns(), since ? &f->since_ns : &f->until_ns) != 0)
			return -1;
		if (since)
			f->has_since = 1;
		else
			f->has_until = 1;
	} else if (is_option(arg, "--debug-dir")) {
		if (option_value(argc, argv, i, "--debug-dir", &v) != 0)
			return -1;
		f->debug_dirs = realloc(f->debug_dirs, (f->n_debug_dirs + 1) * sizeof(*f->debug_dirs));
		if (!f->debug_dirs)
			cli_out_of_memory();
		f->debug_dirs[f->n_debug_dirs++] = (char *)v;
	} else if (is_option(arg, "--thread")) {
		if (option_value(argc, argv, i, "--thread", &v) != 0)
			return -1;
		f->thread = v;
	} else if (is_option(arg, "--tag")) {
		if (option_value(argc, argv, i, "--tag", &v) != 0)
			return -1;
		if (!strchr(v, '=') || v[0] == '=')
			return cli_fail("--tag wants key=value, got \"%s\"", v);
		f->tags = realloc(f->tags, (f->n_tags + 1) * sizeof(*f->tags));
		if (!f->tags)
			cli_out_of_memory();
		f->tags[f->n_tags++] = v;
	} else if (is_option(arg, "--focus")) {
		if (option_value(argc, argv, i, "--focus", &v) != 0)
			return -1;
		if (f->has_focus)
			return cli_fail("--focus given twice");
		int rc = regcomp(&f->focus, v, REG_EXTENDED | REG_NOSUB);
		if (rc != 0) {
			char msg[128];
			regerror(rc, &f->focus, msg, sizeof(msg));
			return cli_fail("--focus \"%s\": %s", v, msg);
		}
		f->has_focus = 1;
	} else {
		*handled = 0;
	}
	return 0;
}

static int parse_top_option(int argc, char **argv, int *i, struct cli_opts *o, int *handled)
{
	const char *arg = argv[*i], *v;
	*handled = 1;
	if (is_option(arg, "--top")) {
		if (option_value(argc, argv, i, "--top", &v) != 0)
			return -1;
		char *end;
		errno = 0;
		long n = strtol(v, &end, 10);
		if (errno != 0 || *end != '\0' || end == v || n < 0)
			return cli_fail("--top wants a number >= 0, got \"%s\"", v);
		o->top = n;
	} else if (strcmp(arg, "--cum") == 0) {
		o->cum = 1;
	} else if (strcmp(arg, "--raw") == 0) {
		o->raw = 1;
	} else {
		*handled = 0;
	}
	return 0;
}

static int parse_output_option(int argc, char **argv, int *i, struct cli_opts *o, int *handled)
{
	const char *arg = argv[*i];
	*handled = 1;
	if (is_option(arg, "-o") || is_option(arg, "--output"))
		return option_value(argc, argv, i, is_option(arg, "-o") ? "-o" : "--output", &o->output);
	if (is_option(arg, "--title"))
		return option_value(argc, argv, i, "--title", &o->title);
	if (strcmp(arg, "--html") == 0)
		o->html = 1;
	else
		*handled = 0;
	return 0;
}

int parse_opts(int argc, char **argv, unsigned allowed, struct cli_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->top = 20;
	o->paths = xcalloc((size_t)argc + 1, sizeof(*o->paths));
	int only_paths = 0;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		if (only_paths || arg[0] != '-' || strcmp(arg, "-") == 0) {
			o->paths[o->n_paths++] = argv[i];
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_paths = 1;
			continue;
		}
		int handled = 0;
		if ((allowed & OPT_FILTERS) && parse_filter_option(argc, argv, &i, o, &handled) != 0)
			return -1;
		if (!handled && (allowed & OPT_TOP) && parse_top_option(argc, argv, &i, o, &handled) != 0)
			return -1;
		if (!handled && (allowed & OPT_OUTPUT) && parse_output_option(argc, argv, &i, o, &handled) != 0)
			return -1;
		if (!handled)
			return cli_fail("unknown option %s (see stowaway help)", arg);
	}
	return 0;
}

void free_opts(struct cli_opts *o)
{
	if (o->filters.has_focus)
		regfree(&o->filters.focus);
	free(o->filters.tags);
	free(o->filters.debug_dirs);
	free(o->paths);
	memset(o, 0, sizeof(*o));
}

void format_value(char *out, size_t size, int64_t value, const char *unit, int raw)
{
	double v = (double)value, a = v < 0 ? -v : v;
	if (raw) {
		snprintf(out, size, "%lld", (long long)value);
	} else if (strcmp(unit, "nanoseconds") == 0 || strcmp(unit, "ns") == 0) {
		if (a < 1e3)
			snprintf(out, size, "%lldns", (long long)value);
		else if (a < 1e6)
			snprintf(out, size, "%.2fus", v / 1e3);
		else if (a < 1e9)
			snprintf(out, size, "%.2fms", v / 1e6);
		else
			snprintf(out, size, "%.2fs", v / 1e9);
	} else if (strcmp(unit, "bytes") == 0) {
		if (a < 1024)
			snprintf(out, size, "%lldB", (long long)value);
		else if (a < 1024.0 * 1024)
			snprintf(out, size, "%.2fKiB", v / 1024);
		else if (a < 1024.0 * 1024 * 1024)
			snprintf(out, size, "%.2fMiB", v / (1024.0 * 1024));
		else
			snprintf(out, size, "%.2fGiB", v / (1024.0 * 1024 * 1024));
	} else {
		snprintf(out, size, "%lld", (long long)value);
	}
}
