/* The OTEP 4947 thread-context record, as the test writers publish it. */
#ifndef OTEL_WRITER_H
#define OTEL_WRITER_H

#include <stdint.h>

struct otel_thread_ctx_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t reserved;
	uint16_t attrs_data_size;
	uint8_t attrs_data[36]; /* unused by these writers: attrs_data_size stays 0 */
};

/* Defined (and exported from the dynamic symbol table) by the executable or
 * by libotel_ctx.so, depending on the build. */
extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

#endif
