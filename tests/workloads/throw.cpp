// Load-matrix workload: C++ exceptions thrown and caught, iostreams, new/delete.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

static int parse(const std::string &s)
{
	if (s.empty())
		throw std::invalid_argument("empty");
	return std::stoi(s);
}

int main()
{
	std::vector<std::string> in = {"1", "", "x", "40"};
	int sum = 0, errors = 0;
	for (const auto &s : in) {
		try {
			sum += parse(s);
		} catch (const std::exception &e) {
			errors++;
		}
	}
	auto v = std::make_unique<std::vector<int>>(1000, 7);
	std::cout << "sum " << sum << " errors " << errors << " v " << v->size() << std::endl;
	return 0;
}
