// The C++ call chain (see unwind_chain.h): a namespace function, a static
// member function, a function template and a member of a class template.
#include "unwind_chain.h"

namespace unwind_test {

static volatile unsigned long sink;

template <typename T> struct Spinner {
	__attribute__((noinline)) static int leaf(chain_keep_going_fn keep_going)
	{
		int spins = 0;
		while (keep_going()) {
			for (T i = 0; i < 1000; i++)
				sink += static_cast<unsigned long>(i);
			spins++;
		}
		return spins;
	}
};

template <int N> __attribute__((noinline)) int c(chain_keep_going_fn keep_going)
{
	int r = Spinner<int>::leaf(keep_going);
	sink += N;
	return r + 1;
}

struct Walker {
	__attribute__((noinline)) static int b(chain_keep_going_fn keep_going)
	{
		int r = c<3>(keep_going);
		sink += 2;
		return r + 1;
	}
};

__attribute__((noinline)) int a(chain_keep_going_fn keep_going)
{
	int r = Walker::b(keep_going);
	sink += 1;
	return r + 1;
}

__attribute__((noinline)) int recurse(int depth, chain_keep_going_fn keep_going)
{
	if (depth <= 0)
		return Spinner<int>::leaf(keep_going);
	int r = recurse(depth - 1, keep_going);
	sink += static_cast<unsigned long>(depth);
	return r + 1;
}

} // namespace unwind_test

extern "C" int chain_run(chain_keep_going_fn keep_going) { return unwind_test::a(keep_going) + 1; }

extern "C" void chain_functions(const void *fns[4])
{
	fns[0] = reinterpret_cast<const void *>(&unwind_test::Spinner<int>::leaf);
	fns[1] = reinterpret_cast<const void *>(&unwind_test::c<3>);
	fns[2] = reinterpret_cast<const void *>(&unwind_test::Walker::b);
	fns[3] = reinterpret_cast<const void *>(&unwind_test::a);
}

extern "C" int chain_recurse(int depth, chain_keep_going_fn keep_going)
{
	return unwind_test::recurse(depth, keep_going);
}

extern "C" const void *chain_recurse_function(void)
{
	return reinterpret_cast<const void *>(&unwind_test::recurse);
}
