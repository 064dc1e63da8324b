/* Aggregated call stacks: the one model behind report, flame, folded, diff
 * and convert.  Frame names are interned; each distinct stack (root first)
 * carries the sum of its sample values. */
#ifndef STOWAWAY_CLI_STACKS_H
#define STOWAWAY_CLI_STACKS_H

#include <stddef.h>
#include <stdint.h>

struct name_table {
	char **names;
	size_t n, cap;
	uint32_t *slots; /* open addressing: name id + 1, 0 empty */
	size_t n_slots;
};

/* Returns the id of the name, adding it if new. */
uint32_t names_intern(struct name_table *t, const char *s);
void names_free(struct name_table *t);

struct stack {
	size_t offset;  /* first frame in stack_set.frames */
	uint32_t depth;
	int64_t value;
};

struct stack_set {
	struct name_table names;
	uint32_t *frames; /* name ids; each stack's frames root first */
	size_t n_frames, frames_cap;
	struct stack *stacks;
	size_t n_stacks, stacks_cap;
	uint32_t *slots; /* stack index + 1 */
	size_t n_slots;
	int64_t total;
};

/* Adds value to the stack frames[0..depth) (root first), merging equal stacks. */
void stacks_add(struct stack_set *s, const uint32_t *frames, size_t depth, int64_t value);
void stacks_free(struct stack_set *s);

/* Stack indexes ordered by frame names, root first (flame graph and folded
 * order).  Caller frees. */
size_t *stacks_sorted(const struct stack_set *s);

/* Per-function totals: flat (leaf) and cumulative (anywhere in the stack,
 * counted once per stack), indexed by name id.  Caller frees both. */
void stacks_function_totals(const struct stack_set *s, int64_t **flat, int64_t **cum);

#endif
