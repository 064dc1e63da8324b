/* What a symbolizer tells about one program counter, and the callback type
 * through which the encoder asks for it (symbols_resolve is one).  Types
 * only: a consumer includes this without linking the symbols module. */
#ifndef STOWAWAY_SYMBOLS_FRAME_H
#define STOWAWAY_SYMBOLS_FRAME_H

#include <stdbool.h>
#include <stdint.h>

/* Most inlined frames one location carries (deeper chains keep the innermost). */
#define SW_MAX_INLINED 16

/* A function inlined at a program counter. */
struct sw_inlined_frame {
	const char *function; /* NULL: unnamed */
	const char *file;     /* NULL: unknown */
	int64_t line;         /* 0: unknown */
};

/* What the symbolizer knows about one program counter.  The encoder zeroes
 * the struct before each call; strings must stay valid until the encode
 * call returns. */
struct sw_frame_info {
	uint64_t map_start, map_limit, map_offset; /* mapping; limit 0: none */
	const char *map_path; /* "" or NULL: unknown */
	const char *build_id; /* hex of NT_GNU_BUILD_ID, "" or NULL: unknown */
	const char *function; /* NULL: no symbol (the location keeps module+address) */
	const char *file;     /* source file, NULL: unknown */
	int64_t line;         /* source line, 0: unknown (the call site when inlined frames exist) */
	/* Frames inlined into `function` at pc, innermost first: inlined[0] is
	 * the code at pc, each one was inlined into the next, the last into
	 * `function`.  A location gets one line per frame, innermost first. */
	struct sw_inlined_frame inlined[SW_MAX_INLINED];
	uint32_t n_inlined;
	bool debug_info; /* debug information was consulted for pc (has_inline_frames) */
	bool own_code;   /* the profiler's own frame: left out of the stack */
};
/* false: nothing is known about pc (the location gets its address only). */
typedef bool (*sw_resolve_fn)(void *ctx, uint64_t pc, struct sw_frame_info *out);

#endif
