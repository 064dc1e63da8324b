/* A library that owns the OpenTelemetry thread-context variable, the way a
 * tracer's native part would (built -fPIC -mtls-dialect=gnu2: TLSDESC). */
#include "otel_writer.h"

__attribute__((visibility("default"))) __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;
