/* A program that allocates with mimalloc's own API (mi_malloc, mi_free), as
 * code that links mimalloc without overriding malloc does: none of those
 * allocations passes through malloc.  Runs for argv[1] seconds (default 3),
 * then prints "done". */
#include <mimalloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 3.0;
	double end = now() + secs;
	enum { KEEP = 64 };
	void *kept[KEEP] = {0};
	unsigned long blocks = 0;
	while (now() < end) {
		for (int i = 0; i < 1000; i++, blocks++) {
			unsigned k = (unsigned)(blocks % KEEP);
			mi_free(kept[k]);
			kept[k] = mi_malloc(4096);
			if (kept[k] == NULL)
				return 1;
			memset(kept[k], (int)k, 64);
		}
	}
	for (int k = 0; k < KEEP; k++)
		mi_free(kept[k]);
	printf("done\n");
	return 0;
}
