/* Small helpers shared by the CLI modules (hosted C: the CLI links musl
 * statically and may use libc).  Allocation failure ends the program with
 * one "stowaway:" line: the CLI has no state worth saving at that point. */
#ifndef STOWAWAY_CLI_UTIL_H
#define STOWAWAY_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Error text set by the failing function, printed by main as
 * "stowaway: <text>".  One buffer: the CLI is single-threaded. */
#define CLI_ERR_SIZE 512
extern char cli_err[CLI_ERR_SIZE];

/* Formats into cli_err.  cli_fail() also evaluates to -1 (a macro, so
 * static analysers see every error path return -1): callers write
 * `return cli_fail("...", ...);`. */
void cli_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define cli_fail(...) (cli_set_error(__VA_ARGS__), -1)

/* Prints "stowaway: out of memory" and exits 1. */
void cli_out_of_memory(void) __attribute__((noreturn));
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
/* Grows an array of elem_size elements to hold at least `need` elements;
 * *cap is updated.  Checks multiplication overflow. */
void *xgrow(void *ptr, size_t *cap, size_t need, size_t elem_size);
char *xstrndup(const char *s, size_t len);

/* A growable byte buffer. */
struct cli_buf {
	unsigned char *data;
	size_t len;
	size_t cap;
};
void buf_append(struct cli_buf *b, const void *data, size_t len);
void buf_printf(struct cli_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(struct cli_buf *b);

/* Reads a whole regular file (at most max_size bytes) into *out. */
int read_file(const char *path, size_t max_size, struct cli_buf *out);
/* Writes data to path atomically: temp file in the same directory, fsync,
 * rename, with the given mode. */
int write_file_atomic(const char *path, const void *data, size_t len, unsigned mode);

/* FNV-1a, for hash tables. */
uint64_t hash_bytes(const void *data, size_t len, uint64_t seed);

#endif
