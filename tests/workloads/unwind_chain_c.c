/* The C call chain (see unwind_chain.h).  noinline keeps every frame, and
 * the work after each call keeps the compiler from turning it into a jump. */
#include "unwind_chain.h"

static volatile unsigned long sink;

__attribute__((noinline)) static int chain_leaf(chain_keep_going_fn keep_going)
{
	int spins = 0;
	while (keep_going()) {
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
		spins++;
	}
	return spins;
}

__attribute__((noinline)) static int chain_c(chain_keep_going_fn keep_going)
{
	int r = chain_leaf(keep_going);
	sink += 3;
	return r + 1;
}

__attribute__((noinline)) static int chain_b(chain_keep_going_fn keep_going)
{
	int r = chain_c(keep_going);
	sink += 2;
	return r + 1;
}

__attribute__((noinline)) static int chain_a(chain_keep_going_fn keep_going)
{
	int r = chain_b(keep_going);
	sink += 1;
	return r + 1;
}

int chain_run(chain_keep_going_fn keep_going) { return chain_a(keep_going) + 1; }

void chain_functions(const void *fns[4])
{
	fns[0] = (const void *)chain_leaf;
	fns[1] = (const void *)chain_c;
	fns[2] = (const void *)chain_b;
	fns[3] = (const void *)chain_a;
}

__attribute__((noinline)) int chain_recurse(int depth, chain_keep_going_fn keep_going)
{
	if (depth <= 0)
		return chain_leaf(keep_going);
	int r = chain_recurse(depth - 1, keep_going);
	sink += (unsigned long)depth;
	return r + 1;
}

const void *chain_recurse_function(void) { return (const void *)chain_recurse; }
