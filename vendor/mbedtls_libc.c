/* The C library string functions mbedTLS calls, defined hidden so that
 * libstowaway.so never binds them to the host's libc.  (memcpy, memmove,
 * memset and memcmp come from src/rt/compiler_support.c.)  Built into the
 * .so only, by vendor/mbedtls.mk; test programs use their libc's. */
#include "rt/rt.h"

#define HIDDEN __attribute__((visibility("hidden")))

HIDDEN size_t strlen(const char *s);
HIDDEN int strcmp(const char *a, const char *b);
HIDDEN char *strchr(const char *s, int c);
HIDDEN char *strstr(const char *haystack, const char *needle);

size_t strlen(const char *s) { return rt_strlen(s); }

int strcmp(const char *a, const char *b) { return rt_strcmp(a, b); }

char *strchr(const char *s, int c) { return (char *)rt_strchr(s, c); }

char *strstr(const char *haystack, const char *needle)
{
	size_t n = rt_strlen(needle);
	if (n == 0)
		return (char *)haystack;
	for (const char *p = haystack; *p; p++)
		if (*p == needle[0] && rt_strncmp(p, needle, n) == 0)
			return (char *)p;
	return NULL;
}
