// Workload for names.py: a namespaced template member burns CPU on a
// thread of its own (so its stacks start in pthread's start routine), and
// main frees in a hot loop (glibc's free has the aliases cfree and
// __libc_free).  Usage: names_cxx SECONDS
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>

static volatile uint64_t sink;

namespace geometry {
template <class T> struct Mesh {
	T weight;
	__attribute__((noinline)) T relax(int rounds);
};

template <class T> T Mesh<T>::relax(int rounds)
{
	T w = weight + (T)sink;
	for (int i = 0; i < rounds; i++)
		w = w * (T)0.999 + (T)0.001 * (T)i;
	return w;
}
} // namespace geometry

static double seconds = 2.0;

static bool expired(std::chrono::steady_clock::time_point start)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= seconds;
}

static void *relax_thread(void *)
{
	geometry::Mesh<float> mesh{1.0f};
	auto start = std::chrono::steady_clock::now();
	while (!expired(start))
		sink = sink + (uint64_t)mesh.relax(200000);
	return nullptr;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_t t;
	if (pthread_create(&t, nullptr, relax_thread, nullptr) != 0)
		return 1;
	auto start = std::chrono::steady_clock::now();
	void *volatile keep;
	while (!expired(start)) {
		for (int i = 0; i < 10000; i++) {
			void *p = malloc(64 + (size_t)(i & 255));
			keep = p;
			free(keep);
		}
	}
	pthread_join(t, nullptr);
	printf("sink %llu\n", (unsigned long long)sink);
	return 0;
}
