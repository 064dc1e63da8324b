/* Interned names and merged stacks. */
#include "cli/stacks.h"

#include <stdlib.h>
#include <string.h>

#include "cli/util.h"

static void names_rehash(struct name_table *t)
{
	free(t->slots);
	t->n_slots = t->n_slots ? t->n_slots * 2 : 1024;
	t->slots = xcalloc(t->n_slots, sizeof(*t->slots));
	for (size_t i = 0; i < t->n; i++) {
		size_t h = (size_t)hash_bytes(t->names[i], strlen(t->names[i]), 0) & (t->n_slots - 1);
		while (t->slots[h])
			h = (h + 1) & (t->n_slots - 1);
		t->slots[h] = (uint32_t)i + 1;
	}
}

uint32_t names_intern(struct name_table *t, const char *s)
{
	if (2 * (t->n + 1) > t->n_slots)
		names_rehash(t);
	size_t len = strlen(s);
	size_t h = (size_t)hash_bytes(s, len, 0) & (t->n_slots - 1);
	while (t->slots[h]) {
		uint32_t id = t->slots[h] - 1;
		if (strcmp(t->names[id], s) == 0)
			return id;
		h = (h + 1) & (t->n_slots - 1);
	}
	if (t->n >= UINT32_MAX - 1)
		cli_out_of_memory();
	t->names = xgrow(t->names, &t->cap, t->n + 1, sizeof(*t->names));
	t->names[t->n] = xstrndup(s, len);
	t->slots[h] = (uint32_t)t->n + 1;
	return (uint32_t)t->n++;
}

void names_free(struct name_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->names[i]);
	free(t->names);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static uint64_t hash_frames(const uint32_t *frames, size_t depth)
{
	return hash_bytes(frames, depth * sizeof(*frames), depth);
}

static void stacks_rehash(struct stack_set *s)
{
	free(s->slots);
	s->n_slots = s->n_slots ? s->n_slots * 2 : 1024;
	s->slots = xcalloc(s->n_slots, sizeof(*s->slots));
	for (size_t i = 0; i < s->n_stacks; i++) {
		const struct stack *st = &s->stacks[i];
		size_t h = (size_t)hash_frames(s->frames + st->offset, st->depth) & (s->n_slots - 1);
		while (s->slots[h])
			h = (h + 1) & (s->n_slots - 1);
		s->slots[h] = (uint32_t)i + 1;
	}
}

void stacks_add(struct stack_set *s, const uint32_t *frames, size_t depth, int64_t value)
{
	s->total += value;
	if (2 * (s->n_stacks + 1) > s->n_slots)
		stacks_rehash(s);
	size_t h = (size_t)hash_frames(frames, depth) & (s->n_slots - 1);
	while (s->slots[h]) {
		struct stack *st = &s->stacks[s->slots[h] - 1];
		if (st->depth == depth &&
		    (depth == 0 || memcmp(s->frames + st->offset, frames, depth * sizeof(*frames)) == 0)) {
			st->value += value;
			return;
		}
		h = (h + 1) & (s->n_slots - 1);
	}
	/* One spare slot: the array exists once any stack does, even if every
	 * stack so far is empty (frames + offset on NULL is undefined). */
	s->frames = xgrow(s->frames, &s->frames_cap, s->n_frames + depth + 1, sizeof(*s->frames));
	if (depth)
		memcpy(s->frames + s->n_frames, frames, depth * sizeof(*frames));
	s->stacks = xgrow(s->stacks, &s->stacks_cap, s->n_stacks + 1, sizeof(*s->stacks));
	s->stacks[s->n_stacks] = (struct stack){.offset = s->n_frames, .depth = (uint32_t)depth, .value = value};
	s->n_frames += depth;
	s->slots[h] = (uint32_t)s->n_stacks + 1;
	s->n_stacks++;
}

void stacks_free(struct stack_set *s)
{
	names_free(&s->names);
	free(s->frames);
	free(s->stacks);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

/* qsort has no context argument; the CLI is single-threaded. */
static const struct stack_set *sort_set;

static int cmp_stacks(const void *a, const void *b)
{
	const struct stack *x = &sort_set->stacks[*(const size_t *)a];
	const struct stack *y = &sort_set->stacks[*(const size_t *)b];
	uint32_t n = x->depth < y->depth ? x->depth : y->depth;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t fx = sort_set->frames[x->offset + i], fy = sort_set->frames[y->offset + i];
		if (fx == fy)
			continue;
		return strcmp(sort_set->names.names[fx], sort_set->names.names[fy]);
	}
	return (x->depth > y->depth) - (x->depth < y->depth);
}

size_t *stacks_sorted(const struct stack_set *s)
{
	size_t *order = xcalloc(s->n_stacks, sizeof(*order));
	for (size_t i = 0; i < s->n_stacks; i++)
		order[i] = i;
	sort_set = s;
	qsort(order, s->n_stacks, sizeof(*order), cmp_stacks);
	sort_set = NULL;
	return order;
}

void stacks_function_totals(const struct stack_set *s, int64_t **flat, int64_t **cum)
{
	size_t n = s->names.n;
	*flat = xcalloc(n, sizeof(**flat));
	*cum = xcalloc(n, sizeof(**cum));
	/* last_seen[name] = stack index + 1: counts a name once per stack. */
	size_t *last_seen = xcalloc(n, sizeof(*last_seen));
	for (size_t i = 0; i < s->n_stacks; i++) {
		const struct stack *st = &s->stacks[i];
		const uint32_t *f = s->frames + st->offset;
		if (st->depth > 0)
			(*flat)[f[st->depth - 1]] += st->value;
		for (uint32_t d = 0; d < st->depth; d++) {
			if (last_seen[f[d]] == i + 1)
				continue;
			last_seen[f[d]] = i + 1;
			(*cum)[f[d]] += st->value;
		}
	}
	free(last_seen);
}
