/* The analysis commands and the option parsing they share. */
#ifndef STOWAWAY_CLI_COMMANDS_H
#define STOWAWAY_CLI_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "cli/profiles.h"

/* Which options a command accepts. */
enum {
	OPT_FILTERS = 1u << 0, /* --sample-index --since --until --thread --tag --focus */
	OPT_TOP = 1u << 1,     /* --top N --cum --raw */
	OPT_OUTPUT = 1u << 2,  /* -o FILE --html --title TEXT */
};

struct cli_opts {
	struct filters filters;
	long top;      /* rows per table, 0: all */
	int cum;       /* sort (report) or compare (diff) by cumulative value */
	int raw;       /* print exact integers instead of humanised units */
	int html;      /* flame: interactive HTML instead of SVG */
	const char *output;
	const char *title;
	char **paths;  /* positional arguments */
	size_t n_paths;
};

/* Parses argv[0..argc) (after the command name).  Returns 0 or -1 with
 * cli_err set. */
int parse_opts(int argc, char **argv, unsigned allowed, struct cli_opts *o);
void free_opts(struct cli_opts *o);

/* Parses a time for --since/--until: Unix seconds ("1714557600[.5]"),
 * RFC 3339 ("2024-05-01T10:00:00Z", "...+02:00") or an age ("90s", "15m",
 * "2h", "1d": that long before now_ns). */
int parse_time(const char *s, int64_t now_ns, int64_t *out_ns);

/* A value with its unit made readable: ns -> us/ms/s, bytes -> KiB/MiB/GiB. */
void format_value(char *out, size_t size, int64_t value, const char *unit, int raw);

/* Each returns the process exit status after printing any error. */
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_flame(int argc, char **argv);
int cmd_folded(int argc, char **argv);
int cmd_convert(int argc, char **argv);

/* Writes the selection as folded text (root first, ';' joined, value). */
void write_folded(const struct selection *sel, struct cli_buf *out);

#endif
