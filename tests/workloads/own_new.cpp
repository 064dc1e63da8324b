// A C++ program with its own global operator new and delete (an arena), as
// a service with a custom allocator: the loader binds operator new to this
// definition before any LD_PRELOAD library's.  malloc stays the C library's.
// Uses the C++ library (std::string), whose own calls to operator new bind
// to this definition too.  Prints "allocated N bytes".
#include <cstddef>
#include <cstdio>
#include <new>
#include <string>

static char arena[64 << 20];
static std::size_t used;

void *operator new(std::size_t n)
{
	n = (n + 15) & ~static_cast<std::size_t>(15);
	if (used + n > sizeof(arena))
		used = 0;
	void *p = arena + used;
	used += n;
	return p;
}
void *operator new[](std::size_t n) { return operator new(n); }
void operator delete(void *) noexcept {}
void operator delete(void *, std::size_t) noexcept {}
void operator delete[](void *) noexcept {}
void operator delete[](void *, std::size_t) noexcept {}

int main()
{
	std::size_t total = 0;
	for (int i = 0; i < 100000; i++) {
		int *volatile p = new int[250];
		p[0] = i;
		total += 1000;
		delete[] p;
		std::string s(100, 'x');
		s += std::to_string(i);
		total += s.size() > 100 ? 0 : 1;
	}
	std::printf("allocated %zu bytes\n", total);
	return 0;
}
