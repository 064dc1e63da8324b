// A C++ -O2 -g program whose time is spent in an always-inline helper
// (geometry::Mesh<float>::smooth, inlined into relax): a profile with
// inlined frames shows smooth with its own file:line on most samples.
// Usage: inline_hot CPU_SECONDS (process CPU time, so a loaded machine only
// stretches the run)
#include "inline_hot.h"

#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace geometry {

template <typename T> __attribute__((noinline)) void Mesh<T>::relax(int rounds)
{
	std::vector<T> out(n);
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < n; i++)
			out[i] = smooth(i);
		for (int i = 0; i < n; i++)
			v[i] = out[i];
	}
}

template struct Mesh<float>;

} // namespace geometry

static volatile float sink;

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	std::vector<float> data(4096);
	for (size_t i = 0; i < data.size(); i++)
		data[i] = float(i % 97) / 97.0f;
	geometry::Mesh<float> m{data.data(), int(data.size())};
	timespec ts;
	do {
		m.relax(50);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (double(ts.tv_sec) + double(ts.tv_nsec) / 1e9 < seconds);
	sink = data[7];
	printf("%f\n", (double)sink);
	return 0;
}
