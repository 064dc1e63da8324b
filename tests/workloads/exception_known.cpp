// Exception known-answer workload: three exception types thrown at known
// rates from three functions, one of them also rethrown.
//   std::runtime_error      thrown in throw_runtime      5 of every 10 rounds
//   app::ParseError         thrown in throw_parse        3 of every 10
//   (anonymous)::Timeout    thrown in throw_timeout      2 of every 10, each
//                           caught in relay_timeout and rethrown once
// Prints "truth <type> <throw events>" (a rethrow is a throw event).
// Usage: exception_known [rounds]   (default 400000)
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace app {
struct ParseError {
	int line;
};
} // namespace app

namespace {
struct Timeout {
	long ms;
};
} // namespace

static volatile int sink;

__attribute__((noinline)) static void throw_runtime(int i)
{
	throw std::runtime_error(i % 2 ? "odd" : "even");
}

__attribute__((noinline)) static void throw_parse(int i) { throw app::ParseError{ i }; }

__attribute__((noinline)) static void throw_timeout(int i) { throw Timeout{ i }; }

__attribute__((noinline)) static void relay_timeout(int i)
{
	try {
		throw_timeout(i);
	} catch (const Timeout &) {
		sink = sink + 1;
		throw;
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 400000;
	long runtime = 0, parse = 0, timeout = 0;
	for (long r = 0; r < rounds; r++) {
		int k = (int)(r % 10);
		try {
			if (k < 5) {
				runtime++;
				throw_runtime((int)r);
			} else if (k < 8) {
				parse++;
				throw_parse((int)r);
			} else {
				timeout += 2;
				relay_timeout((int)r);
			}
		} catch (const std::runtime_error &) {
			sink = sink + 1;
		} catch (const app::ParseError &) {
			sink = sink + 2;
		} catch (const Timeout &) {
			sink = sink + 3;
		}
	}
	printf("truth std::runtime_error %ld\n", runtime);
	printf("truth app::ParseError %ld\n", parse);
	printf("truth (anonymous namespace)::Timeout %ld\n", timeout);
	return 0;
}
