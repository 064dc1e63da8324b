/* The freestanding runtime every other part of stowaway is built on.
 *
 * Nothing here calls the host libc.  Functions marked [signal-safe] may be
 * called from a signal handler; everything else may take our own locks or
 * allocate from our own mmap-backed heap (never from the host's).
 */
#ifndef STOWAWAY_RT_H
#define STOWAWAY_RT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>

#include "rt/arch.h"

#define RT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define RT_MIN(a, b) ((a) < (b) ? (a) : (b))
#define RT_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RT_UNUSED(x) ((void)(x))
/* Nanoseconds in a second. */
#define RT_NS_PER_SEC 1000000000ull
/* 2^64 / golden ratio, odd: the multiplier of Fibonacci hashing (the top
 * bits of key * RT_HASH_MUL64 index a power-of-two table) and the step of
 * splitmix64. */
#define RT_HASH_MUL64 0x9e3779b97f4a7c15ull
/* Hashes: a 64-bit multiply-xorshift mix.  h is the running state (start
 * with RT_HASH_SEED); rt_hash_fold makes 32 well-mixed bits of it.  The word
 * step is inline: stack hashing calls it once per frame. */
#define RT_HASH_SEED 0x243f6a8885a308d3ull
static inline uint64_t rt_hash_mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * RT_HASH_MUL64;
	return h ^ (h >> 29);
}
uint64_t rt_hash_bytes(uint64_t h, const void *p, size_t n);
uint32_t rt_hash_fold(uint64_t h);
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- memory and strings [signal-safe] ---- */
void *rt_memcpy(void *dst, const void *src, size_t n);
void *rt_memmove(void *dst, const void *src, size_t n);
void *rt_memset(void *dst, int c, size_t n);
int rt_memcmp(const void *a, const void *b, size_t n);
const void *rt_memchr(const void *s, int c, size_t n);
size_t rt_strlen(const char *s);
size_t rt_strnlen(const char *s, size_t max);
int rt_strcmp(const char *a, const char *b);
int rt_strncmp(const char *a, const char *b, size_t n);
const char *rt_strchr(const char *s, int c);
bool rt_streq(const char *a, const char *b);
bool rt_starts_with(const char *s, const char *prefix);
/* Copies at most cap-1 bytes and always terminates (cap > 0); returns strlen(src). */
size_t rt_strlcpy(char *dst, const char *src, size_t cap);
/* ASCII case-insensitive equality of a length-delimited string and a C string. */
bool rt_eq_nocase(const char *s, size_t n, const char *lit);
/* Little-endian unsigned integers at any alignment (file formats, wire
 * data): one load on the machines we build for. */
static inline uint64_t rt_load_le64(const void *p)
{
	uint64_t v;
	__builtin_memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}
static inline uint32_t rt_load_le32(const void *p)
{
	uint32_t v;
	__builtin_memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

/* Parse an unsigned decimal of exactly n bytes (no sign, no spaces, no
 * overflow).  Returns false on any malformed input. [signal-safe] */
bool rt_parse_u64(const char *s, size_t n, uint64_t *out);
bool rt_parse_i64(const char *s, size_t n, int64_t *out);
bool rt_parse_hex_u64(const char *s, size_t n, uint64_t *out);
/* The value of one hex digit (either case), or -1. */
int rt_hex_digit(int c);

/* ---- formatting [signal-safe] ----
 * Supports %% %c %s %.*s %.Ns %d %i %u %x %X %p with length modifiers l, ll, z
 * and flags/width: '-', '0', decimal width.  Output is always terminated when
 * cap > 0; returns the length the full output would have had. */
size_t rt_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap);
size_t rt_snprintf(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- sorting [signal-safe] ----
 * Sorts n elements of `size` bytes in place so that no element is before its
 * predecessor: heap sort, no allocation, no recursion, O(n log n), not
 * stable.  before(a, b) is a strict order ("a sorts before b"). */
typedef bool (*rt_sort_before)(const void *a, const void *b);
void rt_sort(void *base, size_t n, size_t size, rt_sort_before before);
/* Sorts v[0..n) ascending by a radix sort in byte digits, using scratch[0..n)
 * (a digit every value shares is skipped): a few n steps where rt_sort
 * takes n log n calls of before. */
void rt_sort_u64(uint64_t *v, size_t n, uint64_t *scratch);

/* The first set bit at or after `from` in a bitmap of nwords 64-bit words
 * (bit i is bit i % 64 of words[i / 64]), or -1.  Relaxed loads: for the
 * bitmaps that mark which slots of a table are in use. */
int rt_bitmap_next(const atomic_ullong *words, int nwords, int from);

/* ---- growable byte buffer on our heap ----
 * After any failed growth `failed` is set and further appends are ignored,
 * so a caller checks once at the end. */
struct rt_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool failed;
};
bool rt_buf_reserve(struct rt_buf *b, size_t extra);
void rt_buf_append(struct rt_buf *b, const void *p, size_t n);
void rt_buf_append_byte(struct rt_buf *b, uint8_t c);
void rt_buf_append_str(struct rt_buf *b, const char *s);
void rt_buf_appendf(struct rt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rt_buf_reset(struct rt_buf *b); /* len = 0, keeps capacity */
void rt_buf_free(struct rt_buf *b);

/* ---- allocator: mmap-backed, thread-safe, never the host's malloc ----
 * Not signal-safe.  rt_calloc checks n*size for overflow. */
void *rt_malloc(size_t size);
void *rt_calloc(size_t n, size_t size);
void *rt_realloc(void *p, size_t size);
void rt_free(void *p);
char *rt_strdup(const char *s);
char *rt_strndup(const char *s, size_t n);
/* Whole pages straight from the kernel, zeroed; for large preallocated tables. */
void *rt_pages_alloc(size_t size);
void rt_pages_free(void *p, size_t size);
/* Whole pages, zeroed, that the processes this one forks afterwards share
 * with it (MAP_SHARED anonymous); NULL when the kernel refuses. */
void *rt_shared_pages_alloc(size_t size);
void rt_shared_pages_free(void *p, size_t size);
/* Bytes currently held from the kernel by the allocator (for memory bounds and tests). */
size_t rt_heap_mapped_bytes(void);
/* Between begin and end (nested, any thread), large rt_malloc blocks that
 * are freed stay mapped, up to 1 MiB, and a later large rt_malloc or
 * rt_calloc of up to their size (at least half of it) takes one instead of
 * fresh pages; end gives them all back.  For a burst of work that frees
 * and allocates big buffers in turn (one export's encodes): the pages are
 * faulted in once.  Not rt_pages_alloc's runs. */
void rt_heap_keep_begin(void);
void rt_heap_keep_end(void);
/* Fault injection, in test builds only (compiled with RT_FAULT_INJECTION:
 * libcore.a and libcore-san.a, never libstowaway.so).  rt_heap_fail_at(n,
 * persistent) restarts the count of allocations (calls of rt_malloc,
 * rt_calloc, rt_strdup, rt_pages_alloc, and rt_realloc when it must move)
 * and makes the nth from now
 * fail, and every later one too when persistent; n = 0 turns failures off.
 * rt_heap_live_allocations() is the number of blocks and page runs not yet
 * freed, for leak checks. */
void rt_heap_fail_at(uint64_t n, bool persistent);
uint64_t rt_heap_alloc_count(void);
long rt_heap_live_allocations(void);
/* Around fork: the prepare hook takes the allocator lock so the child never
 * inherits free lists in mid-update; parent and child release it. */
void rt_heap_fork_prepare(void);
void rt_heap_fork_parent(void);
void rt_heap_after_fork_child(void);

/* ---- locks ---- */
/* A futex-based mutex.  Never taken inside a signal handler. */
struct rt_mutex {
	atomic_int state;
};
#define RT_MUTEX_INIT {0}
void rt_mutex_lock(struct rt_mutex *m);
bool rt_mutex_trylock(struct rt_mutex *m);
void rt_mutex_unlock(struct rt_mutex *m);
/* Only valid when no other thread can hold it (fork child). */
void rt_mutex_reset(struct rt_mutex *m);

/* ---- time [signal-safe] ---- */
uint64_t rt_clock_ns(int clockid); /* 0 if the clock cannot be read */
uint64_t rt_monotonic_ns(void);
uint64_t rt_realtime_ns(void);
uint64_t rt_thread_cpu_ns(void);  /* calling thread */
uint64_t rt_process_cpu_ns(void);
/* CPU time of the children this process has waited for (RUSAGE_CHILDREN). */
uint64_t rt_children_cpu_ns(void);
/* From now on, monotonic and realtime reads call `fn`, the vDSO's
 * clock_gettime (found by the symbol registry), if a test read agrees with
 * the kernel's clock; false (and system calls stay) otherwise.  Not
 * signal-safe; any thread. */
bool rt_clock_use_vdso(uintptr_t fn);
/* "the vDSO" or "system calls": how monotonic and realtime are read. */
const char *rt_clock_source(void);
/* Sleep up to ns; returns early (false) if interrupted. */
bool rt_sleep_ns(uint64_t ns);

/* ---- the calling thread [signal-safe] ---- */
/* The thread pointer (x86_64 %fs:0, aarch64 tpidr_el0): unique per live
 * thread, read without a system call; the key of our per-thread tables
 * (we never use the host's TLS). */
static inline uintptr_t rt_thread_pointer(void) { return arch_thread_pointer(); }

static inline uintptr_t rt_stack_pointer(void) { return arch_stack_pointer(); }

/* ---- our signal handlers ---- */
struct sys_sigaction;
typedef void (*rt_signal_handler)(int sig, void *siginfo, void *ucontext);
/* Installs handler for sig (SA_SIGINFO | SA_RESTART, our own sigreturn
 * trampoline); the old action goes to *previous (may be NULL).  -errno. */
long rt_signal_install(int sig, rt_signal_handler handler, struct sys_sigaction *previous);
/* True while handler is still the action of sig (the program may replace it). */
bool rt_signal_is_ours(int sig, rt_signal_handler handler);
/* The highest signal in [lowest, highest] with the default action, or -1. */
int rt_signal_find_free(int highest, int lowest);

/* ---- randomness [signal-safe] ---- */
struct rt_rng {
	uint64_t s[2];
};
void rt_rng_seed(struct rt_rng *r);          /* from getrandom, else time and tid */
uint64_t rt_rng_next(struct rt_rng *r);      /* xorshift128+ */
double rt_rng_uniform(struct rt_rng *r);     /* in (0, 1] */
double rt_rng_exponential(struct rt_rng *r, double mean);
/* Natural log and exp without libm (relative error < 1e-12 on normal inputs). */
double rt_ln(double x);
double rt_exp(double x);
/* Fill buf with random bytes from getrandom; false if unavailable. */
bool rt_random_bytes(void *buf, size_t n);

/* ---- logging: one line "stowaway: ...\n" to fd 2 in a single write ---- */
enum rt_log_level { RT_LOG_ERROR = 0, RT_LOG_WARN = 1, RT_LOG_INFO = 2, RT_LOG_DEBUG = 3 };
void rt_log_set_level(enum rt_log_level level);
enum rt_log_level rt_log_get_level(void);
void rt_log(enum rt_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A writer that takes a finished line ("stowaway: ...\n", n bytes) instead
 * of fd 2 when it returns true (the calling thread has no fd 2 of the
 * program's).  Signal-safe; set once. */
typedef bool (*rt_log_redirect_fn)(const char *line, size_t n);
void rt_log_set_redirect(rt_log_redirect_fn fn);
#define rt_error(...) rt_log(RT_LOG_ERROR, __VA_ARGS__)
#define rt_warn(...) rt_log(RT_LOG_WARN, __VA_ARGS__)
#define rt_info(...) rt_log(RT_LOG_INFO, __VA_ARGS__)
#define rt_debug(...) rt_log(RT_LOG_DEBUG, __VA_ARGS__)
/* Logs at most once per call site. */
#define rt_log_once(level, ...)                                                \
	do {                                                                   \
		static atomic_int rt_once_flag_;                               \
		if (atomic_exchange(&rt_once_flag_, 1) == 0)                   \
			rt_log((level), __VA_ARGS__);                          \
	} while (0)

/* ---- small file helpers ---- */
/* Reads up to cap-1 bytes of a whole file (e.g. /proc) and terminates it.
 * Returns bytes read or -errno. [signal-safe] */
long rt_read_file(const char *path, char *buf, size_t cap);
/* The running executable's path (/proc/self/exe) into buf, NUL-terminated,
 * "" if it cannot be read; its length or -errno. [signal-safe] */
long rt_self_exe_path(char *buf, size_t cap);
/* Writes all n bytes, retrying short writes and EINTR; 0 or -errno. */
long rt_write_all(int fd, const void *buf, size_t n);
/* statx(2) where the kernel (4.11 and later) and the seccomp filter allow
 * it; where they refuse it (ENOSYS, or EPERM from a filter that predates it
 * or lists only the program's own calls), fstatat(2), its fields moved into
 * *st (stx_mask: the basic fields), and every later call goes there at
 * once.  Same arguments and result as statx. [signal-safe] */
struct statx;
long rt_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st);

/* ---- directory listing ----
 * Entries of a directory, "." and ".." included, in the kernel's order.  At
 * most max_reads getdents64 calls of one buffer each; a malformed record
 * ends that buffer.  Not signal-safe (the iterator is 8 KiB: keep it off
 * small stacks). */
struct rt_dir {
	int fd;
	uint32_t reads, max_reads;
	long error; /* -errno of the getdents64 call that ended the listing, else 0 */
	size_t pos, len;
	uint8_t buf[8192];
};
/* Opens path, relative to dirfd (AT_FDCWD: -100), close-on-exec; 0 or -errno.
 * rt_dir_next then yields nothing on failure; a listing that ended on a
 * failed read (a seccomp filter refusing getdents64) says so in `error`. */
long rt_dir_open(struct rt_dir *d, int dirfd, const char *path, uint32_t max_reads);
/* The next entry's name (valid until the next call), or NULL at the end. */
const char *rt_dir_next(struct rt_dir *d);
void rt_dir_close(struct rt_dir *d);

/* ---- environment ----
 * Value of NAME from the environment the process started with, or NULL. */
const char *rt_getenv(const char *name);

#endif
