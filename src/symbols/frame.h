/* What a symbolizer tells about one program counter, and the callback type
 * through which the encoder asks for it (symbols_resolve is one).  Types
 * only: a consumer includes this without linking the symbols module. */
#ifndef STOWAWAY_SYMBOLS_FRAME_H
#define STOWAWAY_SYMBOLS_FRAME_H

#include <stdbool.h>
#include <stdint.h>

/* What the symbolizer knows about one program counter.  The encoder zeroes
 * the struct before each call; strings must stay valid until the encode
 * call returns. */
struct sw_frame_info {
	uint64_t map_start, map_limit, map_offset; /* mapping; limit 0: none */
	const char *map_path; /* "" or NULL: unknown */
	const char *build_id; /* hex of NT_GNU_BUILD_ID, "" or NULL: unknown */
	const char *function; /* NULL: no symbol (the location keeps module+address) */
	const char *file;     /* source file, NULL: unknown */
	int64_t line;         /* source line, 0: unknown */
	bool own_code;        /* the profiler's own frame: left out of the stack */
};
/* false: nothing is known about pc (the location gets its address only). */
typedef bool (*sw_resolve_fn)(void *ctx, uint64_t pc, struct sw_frame_info *out);

#endif
