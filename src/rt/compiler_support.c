/* The compiler may emit calls to memcpy/memmove/memset/memcmp (struct copies,
 * zero-initialisers).  Provide them, hidden, so the library never binds to
 * the host libc's.  Only linked into the .so (tests use libc's). */
#include "rt/rt.h"

__attribute__((visibility("hidden"))) void *memcpy(void *dst, const void *src, size_t n);
__attribute__((visibility("hidden"))) void *memmove(void *dst, const void *src, size_t n);
__attribute__((visibility("hidden"))) void *memset(void *dst, int c, size_t n);
__attribute__((visibility("hidden"))) int memcmp(const void *a, const void *b, size_t n);

void *memcpy(void *dst, const void *src, size_t n) { return rt_memcpy(dst, src, n); }
void *memmove(void *dst, const void *src, size_t n) { return rt_memmove(dst, src, n); }
void *memset(void *dst, int c, size_t n) { return rt_memset(dst, c, n); }
int memcmp(const void *a, const void *b, size_t n) { return rt_memcmp(a, b, n); }
