/* The OTEP 4947 thread-context record, as the test writers publish it. */
#ifndef OTEL_WRITER_H
#define OTEL_WRITER_H

#include <stdint.h>
#include <time.h>

struct otel_thread_ctx_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t reserved;
	uint16_t attrs_data_size;
	uint8_t attrs_data[36]; /* [key index][length][bytes]... */
};

/* Defined (and exported from the dynamic symbol table) by the executable or
 * by libotel_ctx.so, depending on the build. */
extern __thread struct otel_thread_ctx_record *otel_thread_ctx_v1;

static inline uint64_t otel_now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

extern volatile uint64_t otel_sink;

/* A function burning CPU until the thread's CPU clock reaches `until`, with
 * its own constants (so the compiler cannot fold two of them into one) and
 * its own name in stacks. */
#define OTEL_DEFINE_BURN(name, mul, add)                                       \
	__attribute__((noinline, noipa)) static void name(uint64_t until)      \
	{                                                                      \
		uint64_t x = otel_sink;                                        \
		while (otel_now_ns(CLOCK_THREAD_CPUTIME_ID) < until)           \
			for (int i = 0; i < 2000; i++)                         \
				x = x * (mul) + (add);                         \
		otel_sink = x;                                                 \
	}

#endif
