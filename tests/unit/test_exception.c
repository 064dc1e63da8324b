/* The exception-type demangler (collect/exception.c) against c++filt -t
 * (binutils, an independent demangler). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "collect/exception.h"

static const char *const handled[] = {
	"St13runtime_error", "St9bad_alloc", "N3app10ParseErrorE", "N3net2io12TimeoutErrorE",
	"N12_GLOBAL__N_17TimeoutE", "NSt8ios_base7failureB5cxx11E", "11MyException", "i", "PKc",
	"Pc", "KPc", "PPc", "PK3Foo", "Dn", "Ss", "So", "y", "NSt3__113runtime_errorE",
};
static const char *const unhandled[] = {
	"St6vectorIiSaIiEE", "NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE", "Z4mainE5Local",
	"", "3ab", "N3fooE3bar",
};

static void cxxfilt(const char *mangled, char *out, size_t cap)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "c++filt -t '%s'", mangled);
	FILE *p = popen(cmd, "r");
	out[0] = 0;
	if (!p)
		return;
	if (!fgets(out, (int)cap, p))
		out[0] = 0;
	pclose(p);
	out[strcspn(out, "\n")] = 0;
}

static void test_demangle_matches_cxxfilt(void)
{
	for (size_t i = 0; i < sizeof(handled) / sizeof(handled[0]); i++) {
		char ours[256], theirs[256];
		CHECK(exception_demangle(handled[i], ours, sizeof(ours)));
		cxxfilt(handled[i], theirs, sizeof(theirs));
		if (strcmp(ours, theirs) != 0)
			fprintf(stderr, "  %s: ours \"%s\", c++filt \"%s\"\n", handled[i], ours, theirs);
		CHECK(strcmp(ours, theirs) == 0);
	}
}

static void test_demangle_unhandled_kept_mangled(void)
{
	for (size_t i = 0; i < sizeof(unhandled) / sizeof(unhandled[0]); i++) {
		char out[256];
		CHECK(!exception_demangle(unhandled[i], out, sizeof(out)));
		CHECK(strcmp(out, unhandled[i]) == 0);
	}
	char small[8];
	CHECK(!exception_demangle("St13runtime_error", small, sizeof(small)));
	CHECK(strlen(small) == 7);
}

static void test_type_info_name(void)
{
	static const char name[] = "*N3app5ErrorE";
	const void *tinfo[2] = { NULL, name };
	CHECK(strcmp(exception_type_info_name(tinfo), "N3app5ErrorE") == 0);
	CHECK(exception_type_info_name(NULL) == NULL);
}

int main(void)
{
	RUN(test_demangle_matches_cxxfilt);
	RUN(test_demangle_unhandled_kept_mangled);
	RUN(test_type_info_name);
	return CHECK_DONE();
}
