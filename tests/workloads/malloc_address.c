/* A non-PIE executable that takes malloc's address (as node does): the
 * linker gives it a canonical PLT entry, an undefined dynamic symbol with an
 * address, which the loader's lookups of malloc return so that the address
 * is the same in every object; the calls still reach the loader's binding
 * (with the library preloaded, its malloc).  Allocates 200000 blocks of
 * 1000 bytes through the pointer and directly; prints "allocated N". */
#include <stdio.h>
#include <stdlib.h>

void *(*volatile allocate)(size_t);

int main(void)
{
	allocate = malloc; /* in code: an absolute address, the canonical PLT's */
	unsigned long total = 0;
	for (int i = 0; i < 200000; i++) {
		char *p = (i & 1) ? allocate(1000) : malloc(1000);
		if (p == NULL)
			return 1;
		p[0] = (char)i;
		total += 1000;
		free(p);
	}
	printf("allocated %lu\n", total);
	return 0;
}
