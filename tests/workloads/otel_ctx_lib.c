/* A library that owns the OpenTelemetry thread-context variable, the way a
 * tracer's native part would (built -fPIC -mtls-dialect=gnu2: TLSDESC). */
#include "otel_writer.h"

__attribute__((visibility("default"))) __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

/* The calling thread's slot, through the library's own TLS access (a
 * TLSDESC access: glibc may give a dlopened library static TLS for it). */
__attribute__((visibility("default"))) struct otel_thread_ctx_record **otel_ctx_lib_slot(void);
struct otel_thread_ctx_record **otel_ctx_lib_slot(void) { return &otel_thread_ctx_v1; }
