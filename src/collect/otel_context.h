/* OpenTelemetry thread context (OTEP 4947): a tracer publishes, per thread,
 * a pointer to a small record of the active span in the TLS variable
 * `otel_thread_ctx_v1`, exported from the dynamic symbol table of the
 * executable or of a library.  We read it when we sample a thread, so
 * samples carry trace and span ids without the program calling our API.
 *
 * Record (OTEP 4947, all bytes as the writer stores them):
 *   0  trace_id[16]  W3C trace id (big-endian bytes)
 *   16 span_id[8]    W3C span id
 *   24 valid         1 when the record may be used; anything else: ignore it
 *   25 reserved
 *   26 attrs_data_size (uint16, native order)
 *   28 attrs_data    [key index u8][length u8][length bytes of UTF-8] ...
 * Writers set the pointer to NULL, build the record, set valid = 1, then
 * set the pointer, with compiler barriers between the steps.
 *
 * Reads never fault: the TLS slot of the sampled thread is at a fixed
 * distance from its thread pointer (static TLS only; see symbols/tls.h) and
 * the record it points to is read through rt_peek.  With no writer present
 * a read is one atomic load.
 *
 * Attributes (attrs_data) are read when the process context (OTEP 4719: a
 * read-only anonymous mapping named OTEL_CTX holding a Resource protobuf)
 * publishes `threadlocal.attribute_key_map`, the names of the key indexes;
 * at most OTEL_ATTRS_MAX per sample, values cut to OTEL_ATTR_VALUE_MAX - 1
 * bytes. */
#ifndef STOWAWAY_COLLECT_OTEL_CONTEXT_H
#define STOWAWAY_COLLECT_OTEL_CONTEXT_H

#include "rt/rt.h"

#define OTEL_CONTEXT_SYMBOL "otel_thread_ctx_v1"
#define OTEL_RECORD_HEADER 28u
#define OTEL_ATTRS_MAX 4         /* attributes kept per sample */
#define OTEL_ATTR_VALUE_MAX 48   /* bytes kept of a value, NUL included */
#define OTEL_ATTRS_DATA_MAX 612  /* attribute bytes read (640-byte records) */
struct otel_attr {
	uint8_t key;                     /* index into the process context's key map */
	char value[OTEL_ATTR_VALUE_MAX]; /* truncated, NUL-terminated */
};

/* One thread's active span as read from its record. */
struct otel_span {
	uint64_t span_id; /* 0: no valid record */
	uint8_t trace_id[16];
	uint8_t n_attrs;
	struct otel_attr attrs[OTEL_ATTRS_MAX];
};

/* Finds the TLS variable in every loaded module and publishes where it is.
 * At start, and after dlopen/dlclose.  Off the signal path. */
void otel_context_refresh(void);
/* After a dlopen that returned `handle`: the same, and a variable the new
 * library defines is located from the calling thread's copy (dlsym) when the
 * loader's per-thread table does not show it yet; it is read if that copy
 * is in static TLS (glibc places a dlopened library's TLS there when its
 * surplus allows; musl never does for threads that already exist). */
void otel_context_dlopened(void *handle);
/* True when at least one module defines a readable variable.  [signal-safe] */
bool otel_context_present(void);

/* The calling thread's span (its signal handler or hook).  False, with
 * out->span_id = 0, when no valid record is published.  [signal-safe] */
bool otel_context_read_self(struct otel_span *out);
/* Another thread's span, given its thread pointer (wall sampler).  The
 * pointer is read before and after the record; a record detached meanwhile
 * is not used.  [signal-safe] */
bool otel_context_read_thread(uintptr_t thread_pointer, struct otel_span *out);

/* Looks for the process context's key map (OTEP 4719) if none was found
 * yet: at start and after dlopen.  Off the signal path. */
void otel_context_find_key_map(void);
/* The same, if a record with attributes was read since the last call while
 * no key map was known (an SDK publishes it when it starts, maybe after
 * us): for the sampler thread, once a second. */
void otel_context_find_key_map_if_wanted(void);
/* Name of attribute key `index`, or NULL (no key map, or outside it). */
const char *otel_context_key_name(uint8_t index);
/* Decodes a record's attribute bytes into out->attrs (bounded, never reads
 * past n).  [signal-safe] */
void otel_context_parse_attrs(const uint8_t *data, size_t n, struct otel_span *out);

/* Lowercase hex of a trace id, 33 bytes with the NUL. */
void otel_trace_id_hex(const uint8_t id[16], char out[33]);

/* Statistics for the profile's comments: readable variables, modules whose
 * variable lives in dynamic TLS (skipped), records read. */
void otel_context_stats(uint32_t *readable, uint32_t *dynamic, uint64_t *reads);

#endif
