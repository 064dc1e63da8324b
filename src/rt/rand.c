/* Random numbers for sampling decisions, and ln/exp without libm. */
#include "rt/rt.h"
#include "rt/sys.h"

#define LN2 0.693147180559945309417232121458176568

bool rt_random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	size_t got = 0;
	for (int tries = 0; got < n && tries < 8; tries++) {
		long r = sys_getrandom(p + got, n - got, 0);
		if (r > 0)
			got += (size_t)r;
		else if (r != -EINTR)
			return false;
	}
	return got == n;
}

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += RT_HASH_MUL64);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rt_rng_seed(struct rt_rng *r)
{
	uint64_t seed = 0;
	if (!rt_random_bytes(&seed, sizeof(seed)))
		seed = rt_monotonic_ns() ^ ((uint64_t)sys_gettid() << 32) ^ (uint64_t)(uintptr_t)r;
	r->s[0] = splitmix64(&seed);
	r->s[1] = splitmix64(&seed);
	if ((r->s[0] | r->s[1]) == 0)
		r->s[0] = 1;
}

uint64_t rt_rng_next(struct rt_rng *r)
{
	uint64_t s1 = r->s[0];
	const uint64_t s0 = r->s[1];
	const uint64_t result = s0 + s1;
	r->s[0] = s0;
	s1 ^= s1 << 23;
	r->s[1] = s1 ^ s0 ^ (s1 >> 18) ^ (s0 >> 5);
	return result;
}

double rt_rng_uniform(struct rt_rng *r)
{
	/* 53 random bits, shifted into (0, 1]. */
	return ((double)(rt_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
}

double rt_rng_exponential(struct rt_rng *r, double mean)
{
	return -rt_ln(rt_rng_uniform(r)) * mean;
}

double rt_ln(double x)
{
	if (!(x > 0.0))
		return x == 0.0 ? -1.0 / 0.0 : 0.0 / 0.0;
	if (x == 1.0 / 0.0)
		return x;
	uint64_t bits;
	__builtin_memcpy(&bits, &x, sizeof(bits));
	int e = (int)((bits >> 52) & 0x7ff);
	if (e == 0) { /* subnormal: scale into the normal range */
		x *= 18014398509481984.0; /* 2^54 */
		__builtin_memcpy(&bits, &x, sizeof(bits));
		e = (int)((bits >> 52) & 0x7ff) - 54;
	}
	e -= 1023;
	bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	double m;
	__builtin_memcpy(&m, &bits, sizeof(m));
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	/* ln(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (m-1)/(m+1),
	 * |s| < 0.172: 14 terms reach double precision.  Horner form with the
	 * reciprocals precomputed: no division per term. */
	static const double inv_odd[14] = {
		1.0,       1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9,  1.0 / 11, 1.0 / 13,
		1.0 / 15,  1.0 / 17, 1.0 / 19, 1.0 / 21, 1.0 / 23, 1.0 / 25, 1.0 / 27,
	};
	double s = (m - 1.0) / (m + 1.0), s2 = s * s, sum = inv_odd[13];
	for (int k = 12; k >= 0; k--)
		sum = sum * s2 + inv_odd[k];
	sum *= s;
	return 2.0 * sum + (double)e * LN2;
}

double rt_exp(double x)
{
	if (x != x)
		return x;
	if (x > 709.0)
		return 1.0 / 0.0;
	if (x < -745.0)
		return 0.0;
	double kf = x / LN2;
	int k = (int)(kf + (kf >= 0 ? 0.5 : -0.5));
	double rem = x - (double)k * LN2;
	/* e^rem for |rem| <= ln2/2: Taylor series to rem^17/17! (next term
	 * < 1e-20), Horner form with the reciprocal factorials precomputed. */
	static const double inv_fact[18] = {
		1.0,
		1.0,
		1.0 / 2,
		1.0 / 6,
		1.0 / 24,
		1.0 / 120,
		1.0 / 720,
		1.0 / 5040,
		1.0 / 40320,
		1.0 / 362880,
		1.0 / 3628800,
		1.0 / 39916800,
		1.0 / 479001600,
		1.0 / 6227020800.0,
		1.0 / 87178291200.0,
		1.0 / 1307674368000.0,
		1.0 / 20922789888000.0,
		1.0 / 355687428096000.0,
	};
	double sum = inv_fact[17];
	for (int i = 16; i >= 0; i--)
		sum = sum * rem + inv_fact[i];
	/* Multiply by 2^k in two steps so neither factor overflows. */
	int k1 = k / 2, k2 = k - k1;
	uint64_t b1 = (uint64_t)(k1 + 1023) << 52, b2 = (uint64_t)(k2 + 1023) << 52;
	double f1, f2;
	__builtin_memcpy(&f1, &b1, sizeof(f1));
	__builtin_memcpy(&f2, &b2, sizeof(f2));
	return sum * f1 * f2;
}
