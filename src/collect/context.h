/* What each thread says it is doing: the span context (local root span id,
 * span id), the trace endpoint of its root span and a few custom labels,
 * set through the public API (stowaway.h) and attached to every sample the
 * thread produces.
 *
 * Setting is cheap: no system call (after the thread's first call), no lock,
 * no allocation.  Each thread has a slot keyed by its thread pointer with two
 * copies of its context: the writer fills the inactive copy and then flips
 * the active index, so a reader on the same thread (its signal handler, its
 * malloc hook) never sees a torn value; a reader on another thread (the
 * wall sampler) checks a generation counter and retries. */
#ifndef STOWAWAY_COLLECT_CONTEXT_H
#define STOWAWAY_COLLECT_CONTEXT_H

#include "collect/otel_context.h"
#include "profile/profile.h"
#include "rt/rt.h"

#define CONTEXT_SLOTS 4096u /* power of two */
#define CONTEXT_LABELS 4
#define CONTEXT_KEY_MAX 32
#define CONTEXT_VALUE_MAX 96
#define CONTEXT_ENDPOINT_MAX 128

struct context_label {
	char key[CONTEXT_KEY_MAX];     /* "" : unused */
	char value[CONTEXT_VALUE_MAX];
};

/* One consistent view of a thread's context. */
struct context_value {
	uint64_t local_root_span_id; /* 0: no span */
	uint64_t span_id;
	char endpoint[CONTEXT_ENDPOINT_MAX];
	struct context_label labels[CONTEXT_LABELS];
	/* The span an OpenTelemetry tracer published for the thread (OTEP
	 * 4947), span_id 0 when none; filled by the readers, never set. */
	struct otel_span otel;
};

/* A snapshot plus the sw_label array pointing into it, ready for
 * recorder_add; lives in the caller's memory. */
#define CONTEXT_MAX_SAMPLE_LABELS (4 + CONTEXT_LABELS + OTEL_ATTRS_MAX)
struct context_labels {
	struct context_value value;
	struct sw_label labels[CONTEXT_MAX_SAMPLE_LABELS];
	uint32_t n;
	char trace_id_hex[33];
};

/* ---- the calling thread (API setters; readers on the same thread) ---- */
int context_set_span(uint64_t local_root_span_id, uint64_t span_id);
int context_set_endpoint(const char *endpoint);
/* value NULL removes the label; -ENOSPC when CONTEXT_LABELS are in use. */
int context_set_label(const char *key, const char *value);
/* Clears span ids, endpoint and labels. */
int context_clear(void);
/* The calling thread's current context: what it set through the API and
 * the span an OpenTelemetry tracer published for it (otel_context.h); false
 * when there is neither.  [signal-safe] */
bool context_read_self(struct context_value *out);

/* Thread lifecycle (pthread_create interposer): a new thread starts with an
 * empty context even if it reuses an exited thread's thread pointer; an
 * exiting thread frees its slot. */
void context_thread_started(void);
void context_thread_exiting(void);

/* ---- another thread (wall sampler) ----
 * A thread's context slot is in its registry entry (threads.h
 * context_slot).  Reads a consistent copy; false if the slot does not
 * belong to tid or was changing too fast. */
bool context_read_slot(int slot, int tid, struct context_value *out);
/* For the same thread, given its thread pointer (0: unknown): the API
 * context as context_read_slot, plus its OpenTelemetry span.  False when
 * there is neither. */
bool context_read_thread(int slot, int tid, uintptr_t thread_pointer, struct context_value *out);
/* Changes whenever the thread's context changes (0: no context), so a
 * sampler can tell whether what it accumulated still has the same labels. */
unsigned context_generation(int slot, int tid);

/* Fills `out` with the labels of `v` (span ids as numbers, endpoint and
 * custom labels as strings; nothing for empty fields).  Span ids set through
 * the API win; otherwise an OpenTelemetry span gives `span id` (number) and
 * `trace_id` (32 lowercase hex digits), and its attributes string labels
 * named by the process context's key map. */
void context_to_labels(struct context_labels *out);

/* Requests per endpoint: every context_set_endpoint with a non-empty
 * endpoint counts one request for it (lock-free; at most 256 distinct
 * endpoints are told apart, later ones are counted as dropped).  Calls fn
 * for each endpoint counted since the previous call, resets the counts and
 * returns how many requests could not be counted. */
uint64_t context_endpoint_counts_take(void (*fn)(void *ctx, const char *name, uint64_t count),
				      void *ctx);
/* Whether any request was counted since the last take. */
bool context_endpoint_counts_pending(void);

/* In a fork child: only the forking thread survives; other slots are freed
 * and the request counts start from zero. */
void context_after_fork_child(void);

#endif
