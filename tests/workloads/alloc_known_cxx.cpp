// Known-answer workload for the allocation profiler (C++ operator new and
// delete).  Prints "truth <function> <bytes allocated> <bytes live at exit>".
// Usage: alloc_known_cxx [scale]   (scale 1 = about 1.6 GB allocated)
#include <cstdio>
#include <cstdlib>
#include <new>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;

static void touch(void *p)
{
	if (!p)
		abort();
	static_cast<volatile char *>(p)[0] = 1;
	sink = p;
}

struct Node {
	char bytes[64];
};

struct alignas(128) Aligned {
	char bytes[512];
};

// 64-byte objects with new/delete.
static NOINLINE unsigned long long new_objects(long n)
{
	for (long i = 0; i < n; i++) {
		Node *p = new Node;
		touch(p);
		delete p;
	}
	return sizeof(Node) * (unsigned long long)n;
}

// 8 KiB arrays with new[]/delete[].
static NOINLINE unsigned long long new_arrays(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = new char[8192];
		touch(p);
		delete[] p;
	}
	return 8192ull * (unsigned long long)n;
}

// Over-aligned objects: operator new(size_t, align_val_t).
static NOINLINE unsigned long long new_aligned(long n)
{
	for (long i = 0; i < n; i++) {
		Aligned *p = new Aligned;
		touch(p);
		delete p;
	}
	return sizeof(Aligned) * (unsigned long long)n;
}

// 256 KiB buffers with nothrow new.
static NOINLINE unsigned long long new_nothrow(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = new (std::nothrow) char[256 * 1024];
		touch(p);
		delete[] p;
	}
	return 256ull * 1024 * (unsigned long long)n;
}

// 2 KiB arrays kept to the end (the live set).
static char **kept;
static NOINLINE unsigned long long live_arrays(long n)
{
	kept = static_cast<char **>(calloc(static_cast<size_t>(n), sizeof(char *)));
	if (!kept)
		abort();
	for (long i = 0; i < n; i++) {
		kept[i] = new char[2048];
		touch(kept[i]);
	}
	return 2048ull * (unsigned long long)n;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	if (!(scale > 0))
		scale = 1.0;
	unsigned long long a = new_objects(static_cast<long>(4e6 * scale)); // 256 MB
	unsigned long long b = new_arrays(static_cast<long>(64e3 * scale)); // 512 MB
	unsigned long long c = new_aligned(static_cast<long>(5e5 * scale)); // 256 MB
	unsigned long long d = new_nothrow(static_cast<long>(2000 * scale)); // 512 MB
	unsigned long long e = live_arrays(static_cast<long>(48e3 * scale)); // 96 MB live
	std::printf("truth new_objects %llu 0\n", a);
	std::printf("truth new_arrays %llu 0\n", b);
	std::printf("truth new_aligned %llu 0\n", c);
	std::printf("truth new_nothrow %llu 0\n", d);
	std::printf("truth live_arrays %llu %llu\n", e, e);
	std::fflush(stdout);
	return 0;
}
