/* The demangler on known answers (c++filt's output for each, Rust without
 * its hash), limits and malformed input.  demangle_corpus.py judges it on
 * real binaries. */
#include <stdio.h>
#include <string.h>

#include "demangle/demangle.h"
#include "unit/check.h"

static struct demangle_scratch scratch;

static const char *const known[][2] = {
	{"_ZN8geometry4MeshIfE5relaxEi", "geometry::Mesh<float>::relax(int)"},
	{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)"},
	{"_Z3maxIiET_S0_S0_", "int max<int>(int, int)"},
	{"_Z1fPFviE", "f(void (*)(int))"},
	{"_Z1fM1AKFvvE", "f(void (A::*)() const)"},
	{"_Z1fRA3_i", "f(int (&) [3])"},
	{"_ZNK1A1fEv", "A::f() const"},
	{"_ZNR1A1fEv", "A::f() &"},
	{"_Z1fPKc", "f(char const*)"},
	{"_Z1fKPc", "f(char* const)"},
	{"_ZTV1A", "vtable for A"},
	{"_ZThn8_N1A1fEv", "non-virtual thunk to A::f()"},
	{"_ZGVZ4mainE1x", "guard variable for main::x"},
	{"_ZZ4mainENKUlvE_clEv", "main::{lambda()#1}::operator()() const"},
	{"_ZL3barv.cold", "bar() [clone .cold]"},
	{"_ZN1AC2Ev.isra.0", "A::A() [clone .isra.0]"},
	{"_Z1fIJidEEvDpT_", "void f<int, double>(int, double)"},
	{"_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo()"},
	{"_Z1fILc97EEvv", "void f<(char)97>()"},
	{"_Z1fILln5EEvv", "void f<-5l>()"},
	{"_ZN5Outer5InnerIiE1fB5cxx11Ev", "Outer::Inner<int>::f[abi:cxx11]()"},
	{"_ZNKSs4sizeEv", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::size() const"},
	{"_ZStlsISt11char_traitsIcEERSt13basic_ostreamIcT_ES5_PKc",
	 "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> >"
	 "(std::basic_ostream<char, std::char_traits<char> >&, char const*)"},
	{"_ZN10rust_split4work7collatz17hf6d71006a0868702E", "rust_split::work::collatz"},
	{"_ZN59_$LT$rust_split..Xorshift$u20$as$u20$rust_split..Kernel$GT$3run17h0b66a21b3065710cE",
	 "<rust_split::Xorshift as rust_split::Kernel>::run"},
	{"_ZN4core3ops8function6FnOnce40call_once$u7b$$u7b$vtable.shim$u7d$$u7d$17h8865b1b242b3a282E",
	 "core::ops::function::FnOnce::call_once{{vtable.shim}}"},
	{"_RNvCs1234_7mycrate3foo", "mycrate::foo"},
	{"_RINvMNtCsgEmfK2I1SDS_4core3stre18trim_start_matchesReECsgY6Mt91CT9J_14rustc_demangle",
	 "<str>::trim_start_matches::<&str>"},
	{"_RNvNtNtCsjrHSEGnQ3l9_3std6thread11main_thread4MAIN.0", "std::thread::main_thread::MAIN (.0)"},
	{"_RNvXs0_NtNtCs7OxSQD10jZQ_18tracing_subscriber3fmt4timeFG0_QL1_INtNtB7_6format6WriterL0_EEINtNtCsgEm"
	 "fK2I1SDS_4core6result6ResultuNtNtB1u_3fmt5ErrorENtB5_10FormatTime11format_time",
	 "<for<'a, 'b> fn(&'a mut tracing_subscriber::fmt::format::Writer<'b>) -> core::result::Result<(), "
	 "core::fmt::Error> as tracing_subscriber::fmt::time::FormatTime>::format_time"},
};

static void test_known_answers(void)
{
	char out[1024];
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		size_t n = demangle(known[i][0], out, sizeof(out), &scratch);
		if (n == 0 || strcmp(out, known[i][1]) != 0) {
			fprintf(stderr, "  %s\n    got  %s\n    want %s\n", known[i][0], n ? out : "(not demangled)",
				known[i][1]);
			check_failures_in_test++;
		}
		CHECK(n == strlen(out));
	}
}

/* Not mangled, or not understood: 0 and an empty output. */
static void test_rejects(void)
{
	const char *bad[] = {"main", "", "_Z", "_ZN", "_Z1", "_Z3foov.", "_Z1fS0_",
			     "_Z1fT_", "_ZN3foo3barEvjunk", "_ZN5hello17h0123456789abcdefE3x", "_R",
			     "_RNvCs1234_7mycrate", "_RB_", "_RNvB0_3foo", "_R0NvC3foo3bar"};
	char out[64];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(out, 'x', sizeof(out));
		size_t n = demangle(bad[i], out, sizeof(out), &scratch);
		if (n != 0 || out[0] != 0) {
			fprintf(stderr, "  %s -> %s\n", bad[i], out);
			check_failures_in_test++;
		}
	}
	CHECK(demangle(NULL, out, sizeof(out), &scratch) == 0);
}

/* A result that does not fit gives 0, never a cut name. */
static void test_small_output(void)
{
	char out[8];
	CHECK(demangle("_ZN8geometry4MeshIfE5relaxEi", out, sizeof(out), &scratch) == 0);
	CHECK(out[0] == 0);
	CHECK(demangle("_Z1fv", out, sizeof(out), &scratch) == 3 && strcmp(out, "f()") == 0);
	CHECK(demangle("_Z1fv", out, 3, &scratch) == 0);
}

/* Deep nesting stays within the fixed stacks: refused, not crashed. */
static void test_limits(void)
{
	static char name[DEMANGLE_MAX_INPUT + 64];
	static char out[1 << 16];
	size_t k = 0;
	k += (size_t)snprintf(name + k, sizeof(name) - k, "_Z1f");
	for (int i = 0; i < 2000 && k < DEMANGLE_MAX_INPUT - 8; i++)
		name[k++] = 'P';
	name[k++] = 'i';
	name[k] = 0;
	CHECK(demangle(name, out, sizeof(out), &scratch) == 0);
	/* Just past the input limit: kept as is. */
	memset(name, 'i', sizeof(name) - 1);
	memcpy(name, "_Z1f", 4);
	name[DEMANGLE_MAX_INPUT + 1] = 0;
	CHECK(demangle(name, out, sizeof(out), &scratch) == 0);
	/* Many parameters: fine within the limits. */
	k = (size_t)snprintf(name, sizeof(name), "_Z1f");
	for (int i = 0; i < 100; i++)
		name[k++] = 'i';
	name[k] = 0;
	CHECK(demangle(name, out, sizeof(out), &scratch) > 0);
}

int main(void)
{
	RUN(test_known_answers);
	RUN(test_rejects);
	RUN(test_small_output);
	RUN(test_limits);
	return CHECK_DONE();
}
