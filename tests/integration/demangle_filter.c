/* Reads one symbol a line on stdin and writes our demangling of each (the
 * symbol itself when we do not demangle it), like c++filt: for
 * demangle_corpus.py. */
#include <stdio.h>
#include <string.h>

#include "demangle/demangle.h"

int main(void)
{
	static struct demangle_scratch scratch;
	static char line[DEMANGLE_MAX_INPUT + 2];
	static char out[65536];
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = 0;
		size_t n = demangle(line, out, sizeof(out), &scratch);
		puts(n ? out : line);
	}
	return 0;
}
