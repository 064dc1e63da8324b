/* Fuzz helper: an environment built from the input, one line per setting. */
#ifndef STOWAWAY_FUZZ_ENV_H
#define STOWAWAY_FUZZ_ENV_H

#include <stdlib.h>
#include <string.h>

/* Unsets every name, then sets names[i] to line i of text (modified in
 * place: newlines become NULs) while lines last; a value may be empty. */
static inline void fuzz_set_env_lines(const char *const *names, size_t n, char *text)
{
	for (size_t i = 0; i < n; i++)
		unsetenv(names[i]);
	char *line = text;
	for (size_t i = 0; i < n && line; i++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		setenv(names[i], line, 1);
		line = nl ? nl + 1 : NULL;
	}
}

#endif
