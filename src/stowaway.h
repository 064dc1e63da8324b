/* stowaway public C API.
 *
 * The library starts itself from the environment when preloaded
 * (DD_PROFILING_ENABLED=true); these calls are for programs that want to
 * control it explicitly.  Every function is safe to call whether or not
 * profiling is enabled, and returns 0 on success or a negative errno value.
 *
 * To run with or without the library, declare the functions weak and test
 * the address before calling (see docs/api.md):
 *     #pragma weak stowaway_flush
 *     if (stowaway_flush) stowaway_flush();
 */
#ifndef STOWAWAY_H
#define STOWAWAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char *stowaway_version(void);

/* Starts profiling with the configuration read from the environment at load
 * time, even if DD_PROFILING_ENABLED was not set.  0 if already running. */
int stowaway_start(void);

/* Stops every collector and exports what was collected (bounded by
 * STOWAWAY_EXIT_TIMEOUT_MS).  0 if not running. */
int stowaway_stop(void);

/* Ends the current period now and exports it; returns once the export is
 * done (or its deadline passed).  -ESRCH when profiling is not running. */
int stowaway_flush(void);

/* ---- code hotspots: what the calling thread is working on ----
 * Every CPU, wall and allocation sample the thread takes from now on carries
 * these values as labels ("local root span id", "span id", "trace endpoint",
 * and the custom keys), until they are changed or cleared.  The calls are
 * cheap: no system call (after a thread's first call), no lock, no
 * allocation; a sample never sees a half-written value.  They work whether
 * or not profiling is running. */

/* The active span: the trace's local root span id (nonzero) and the span id. */
int stowaway_set_span(uint64_t local_root_span_id, uint64_t span_id);
/* The endpoint (resource) of the current root span, e.g. "GET /users/{id}";
 * NULL or "" clears it.  At most 127 bytes are kept. */
int stowaway_set_endpoint(const char *endpoint);
/* A custom string label (at most 4 per thread; key < 32 bytes, value < 96
 * bytes).  value NULL removes the key.  -ENOSPC when 4 keys are in use. */
int stowaway_set_label(const char *key, const char *value);
/* Clears span ids, endpoint and custom labels of the calling thread. */
int stowaway_clear_context(void);
/* Names the calling thread (the "thread name" label; 15 bytes are kept, as
 * for pthread_setname_np). */
int stowaway_set_thread_name(const char *name);
/* Copies this process's runtime id (a UUID, shared by all of its profiles
 * and new after fork) into buf; -ESRCH when profiling is not running. */
int stowaway_runtime_id(char *buf, size_t size);
/* Adopts the tracer's runtime id (a UUID such as dd-trace's runtime-id), so
 * the profiles' runtime-id tag links them to that tracer's traces.  Works
 * before or after profiling starts; -EINVAL when id is not a UUID.  After
 * fork the child has a new id of its own: call it again in the child with
 * the child tracer's id. */
int stowaway_set_runtime_id(const char *runtime_id);

#ifdef __cplusplus
}
#endif

#endif
