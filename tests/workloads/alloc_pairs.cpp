/* Allocation pairs for instruction counting (alloc_instructions.py):
 * `alloc_pairs malloc N` makes N malloc/free pairs, `alloc_pairs new N` N
 * operator new/delete pairs, each inside its own function so callgrind
 * counts only the loop (--toggle-collect).  A few pairs of both kinds go
 * first, uncounted: one-time work (lazy binding, the hooks' lookups, the
 * thread's slot) stays out of the count. */
#include <cstdlib>
#include <cstring>
#include <new>

extern "C" __attribute__((noinline)) void malloc_pairs(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(64 + (size_t)(i & 63));
		asm volatile("" : : "r"(p) : "memory"); /* the pair is not elided */
		free(p);
	}
}

extern "C" __attribute__((noinline)) void new_pairs(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = ::operator new(64 + (size_t)(i & 63));
		asm volatile("" : : "r"(p) : "memory");
		::operator delete(p);
	}
}

__attribute__((noinline)) static void warm_up(void)
{
	for (int i = 0; i < 16; i++) {
		void *p = malloc(64);
		asm volatile("" : : "r"(p) : "memory");
		free(p);
		p = ::operator new(64);
		asm volatile("" : : "r"(p) : "memory");
		::operator delete(p);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 100000;
	warm_up();
	if (argc > 1 && strcmp(argv[1], "new") == 0)
		new_pairs(n);
	else
		malloc_pairs(n);
	return 0;
}
