/* Loading profile files (pprof, gzip or raw, and folded text) from files
 * and directories, grouping them by kind, and turning the samples of one
 * kind into a stack_set under the user's filters. */
#ifndef STOWAWAY_CLI_PROFILES_H
#define STOWAWAY_CLI_PROFILES_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/pprof.h"
#include "cli/stacks.h"

struct input {
	char *path;
	struct pp_profile prof;
	char *kind; /* sample types "type/unit,type/unit": profiles merge by kind */
};

struct input_set {
	struct input *items;
	size_t n, cap;
};

/* Loads every path: a file, or a directory searched (up to 16 levels) for
 * *.pb.gz, *.pb, *.pprof, *.prof, *.folded, *.collapsed.  Files named
 * *.folded, *.collapsed or *.txt are folded text, others pprof. */
int inputs_load(struct input_set *set, char *const *paths, size_t n_paths);
void inputs_free(struct input_set *set);

/* Parses folded text ("root;...;leaf value" lines) into a profile with one
 * sample type samples/count. */
int folded_parse(const char *path, const char *text, size_t len, struct pp_profile *out);

/* True for names that `convert` and the loader treat as folded text. */
int is_folded_path(const char *path);

struct filters {
	const char *sample_index; /* NAME or N, NULL: default sample type */
	int has_since, has_until;
	int64_t since_ns, until_ns; /* profile time_nanos window [since, until) */
	const char *thread;         /* "thread name" or "thread id" label */
	const char **tags;          /* "key=value" label filters, all must match */
	size_t n_tags;
	int has_focus;
	regex_t focus;              /* keep stacks with a matching function */
	char **debug_dirs;          /* --debug-dir: symbolize stripped binaries' frames first */
	size_t n_debug_dirs;
};

/* What one kind, one sample type and the filters selected. */
struct selection {
	const char *kind;
	const char *type, *unit;
	size_t n_profiles;  /* of this kind */
	size_t n_in_window; /* of those, inside the time window */
	int64_t time_min, time_max; /* time_nanos range of the used profiles */
	int64_t duration;           /* sum of their duration_nanos */
	struct stack_set stacks;
};

/* The distinct kinds, in the order first seen.  Caller frees the array. */
size_t inputs_kinds(const struct input_set *set, const char ***kinds);

/* Builds the selection for one kind. Returns 1 when the kind has no sample
 * type matching filters->sample_index, 0 on success, -1 on error. */
int select_kind(const struct input_set *set, const char *kind, const struct filters *f,
		struct selection *out);

/* For commands that take one kind: picks the only kind, or the only kind
 * having the sample type named by filters->sample_index. */
int select_single(const struct input_set *set, const struct filters *f, struct selection *out);

void selection_free(struct selection *s);

#endif
