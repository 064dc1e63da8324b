// The hot helper lives in its own header so its inlined frame has its own
// file and lines.
#pragma once
#include <cstdint>

namespace geometry {

template <typename T> struct Mesh {
	T *v;
	int n;
	__attribute__((always_inline)) inline T smooth(int i) const
	{
		T a = v[(i + n - 1) % n];
		T b = v[i];
		T c = v[(i + 1) % n];
		T s = a * T(0.25) + b * T(0.5) + c * T(0.25);
		for (int k = 0; k < 16; k++)
			s = s * T(0.999) + T(0.001) * (s * s) - T(0.0005) * (s * s * s);
		return s;
	}
	void relax(int rounds);
};

} // namespace geometry
