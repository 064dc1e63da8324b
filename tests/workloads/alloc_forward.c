/* Test baseline, not part of the profiler: the least an LD_PRELOAD
 * interposer of malloc, free and operator new/delete can cost.  Each entry
 * point jumps through a pointer found once by dlsym(RTLD_NEXT) and does
 * nothing else; alloc_instructions.py counts our hooks' instructions per
 * pair against it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* glibc's own entry points, until the constructor has looked up the next
 * definitions (dlsym may allocate). */
extern void *__libc_malloc(size_t n);
extern void __libc_free(void *p);

typedef void *(*alloc_fn)(size_t);
typedef void (*release_fn)(void *);

static alloc_fn next_malloc = __libc_malloc, next_new;
static release_fn next_free = __libc_free, next_delete;

static void *find(const char *name)
{
	void *p = dlsym(RTLD_NEXT, name);
	if (!p) {
		fprintf(stderr, "alloc_forward: no next %s\n", name);
		abort();
	}
	return p;
}

__attribute__((constructor)) static void alloc_forward_init(void)
{
	void *m = find("malloc"), *f = find("free");
	__builtin_memcpy(&next_free, &f, sizeof(f));
	__builtin_memcpy(&next_malloc, &m, sizeof(m));
}

/* The C++ runtime may come later in the lookup order: looked up on first use. */
__attribute__((noinline)) static void find_cxx(void)
{
	void *n = find("_Znwm"), *d = find("_ZdlPv");
	__builtin_memcpy(&next_delete, &d, sizeof(d));
	__builtin_memcpy(&next_new, &n, sizeof(n));
}

void *malloc(size_t n) { return next_malloc(n); }
void free(void *p) { next_free(p); }
void *_Znwm(size_t n);
void *_Znwm(size_t n)
{
	if (!next_new)
		find_cxx();
	return next_new(n);
}
void _ZdlPv(void *p);
void _ZdlPv(void *p)
{
	if (!next_delete)
		find_cxx();
	next_delete(p);
}
