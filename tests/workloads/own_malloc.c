/* A program with its own allocator in the executable, as a service that
 * links jemalloc or tcmalloc statically: the loader binds malloc (and the
 * C library's own calls to it) to this definition before any LD_PRELOAD
 * library's.  A bump allocator: free keeps nothing.
 * Prints "allocated N bytes" after allocating 200000 blocks of 1000 bytes. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static char *cur, *end;

static void *bump(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!cur || (size_t)(end - cur) < n + 16) {
		size_t size = n + 16 > ((size_t)64 << 20) ? n + 16 : (size_t)64 << 20;
		char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		cur = p;
		end = p + size;
	}
	*(size_t *)(void *)cur = n;
	void *p = cur + 16;
	cur += n + 16;
	return p;
}

void *malloc(size_t n) { return bump(n); }
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b)
{
	void *p = bump(a * b);
	if (p)
		memset(p, 0, a * b);
	return p;
}
void *realloc(void *p, size_t n)
{
	void *q = bump(n);
	if (p && q) {
		size_t old = *(size_t *)(void *)((char *)p - 16);
		memcpy(q, p, old < n ? old : n);
	}
	return q;
}
void *memalign(size_t align, size_t n)
{
	char *p = bump(n + align);
	return p ? (void *)(((size_t)p + align - 1) & ~(align - 1)) : NULL;
}
void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }
int posix_memalign(void **out, size_t align, size_t n)
{
	*out = memalign(align, n);
	return *out ? 0 : 12;
}

__attribute__((noinline)) static size_t work(void)
{
	size_t total = 0;
	for (int i = 0; i < 200000; i++) {
		char *volatile p = malloc(1000);
		p[0] = 1;
		total += 1000;
		free(p);
	}
	return total;
}

int main(void)
{
	printf("allocated %zu bytes\n", work());
	return 0;
}
