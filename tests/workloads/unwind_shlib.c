/* A shared library the unwinder tests call through the PLT.  Built with
 * -nostdlib so the same file serves glibc and musl programs. */
#include "unwind_chain.h"

static volatile unsigned long sink;

__attribute__((noinline)) static int shlib_leaf(chain_keep_going_fn keep_going)
{
	int spins = 0;
	while (keep_going()) {
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
		spins++;
	}
	return spins;
}

int shlib_spin(chain_keep_going_fn keep_going)
{
	int r = shlib_leaf(keep_going);
	sink += 1;
	return r + 1;
}

const void *shlib_leaf_function(void) { return (const void *)shlib_leaf; }
