/* Memory and string helpers: plain loops, no libc, signal-safe. */
#include "rt/rt.h"

void *rt_memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	while (n >= sizeof(uint64_t)) {
		uint64_t w;
		__builtin_memcpy(&w, s, sizeof(w));
		__builtin_memcpy(d, &w, sizeof(w));
		d += sizeof(w);
		s += sizeof(w);
		n -= sizeof(w);
	}
	while (n--)
		*d++ = *s++;
	return dst;
}

void *rt_memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (d == s || n == 0)
		return dst;
	if (d < s || d >= s + n)
		return rt_memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *rt_memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	uint64_t w = 0x0101010101010101ull * (unsigned char)c;
	while (n >= sizeof(w)) {
		__builtin_memcpy(d, &w, sizeof(w));
		d += sizeof(w);
		n -= sizeof(w);
	}
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

int rt_memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < n; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* Eight bytes at a time: a word's zero bytes are found with the carry
 * trick ((w - 0x01..) & ~w & 0x80..), whose lowest set bit marks the first
 * zero byte exactly (false marks only appear above a real one, so little
 * endian only).  memchr reads only its n bytes; the string scans read
 * aligned words, which may reach past the NUL but never past the page
 * holding it.  That is outside the C object, so AddressSanitizer builds
 * (and big-endian ones) scan byte by byte. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang: no __SANITIZE_ADDRESS__ */
#define RT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(RT_ASAN) || \
	!defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#define RT_WORD_SCAN 0
#else
#define RT_WORD_SCAN 1
#endif
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static inline uint64_t zero_bytes(uint64_t w) { return (w - ONES) & ~w & HIGHS; }

const void *rt_memchr(const void *s, int c, size_t n)
{
	const unsigned char *p = s;
	size_t i = 0;
	uint64_t pattern = ONES * (unsigned char)c;
	for (; n - i >= sizeof(uint64_t); i += sizeof(uint64_t)) {
		uint64_t w;
		__builtin_memcpy(&w, p + i, sizeof(w));
		uint64_t z = zero_bytes(w ^ pattern);
		if (z != 0 && RT_WORD_SCAN)
			return p + i + ((unsigned)__builtin_ctzll(z) >> 3);
		if (z != 0)
			break;
	}
	for (; i < n; i++)
		if (p[i] == (unsigned char)c)
			return p + i;
	return NULL;
}

size_t rt_strnlen(const char *s, size_t max)
{
	size_t n = 0;
	if (RT_WORD_SCAN) {
		for (; n < max && ((uintptr_t)(s + n) & (sizeof(uint64_t) - 1)) != 0; n++)
			if (s[n] == 0)
				return n;
		for (; n < max; n += sizeof(uint64_t)) {
			uint64_t w;
			__builtin_memcpy(&w, s + n, sizeof(w)); /* aligned */
			uint64_t z = zero_bytes(w);
			if (z != 0) {
				n += (unsigned)__builtin_ctzll(z) >> 3;
				break;
			}
		}
		return n < max ? n : max;
	}
	while (n < max && s[n])
		n++;
	return n;
}

size_t rt_strlen(const char *s) { return rt_strnlen(s, SIZE_MAX); }

int rt_strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int rt_strncmp(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i] || !a[i])
			return (unsigned char)a[i] - (unsigned char)b[i];
	}
	return 0;
}

const char *rt_strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return s;
		if (!*s)
			return NULL;
	}
}

bool rt_streq(const char *a, const char *b) { return rt_strcmp(a, b) == 0; }

bool rt_starts_with(const char *s, const char *prefix)
{
	return rt_strncmp(s, prefix, rt_strlen(prefix)) == 0;
}

size_t rt_strlcpy(char *dst, const char *src, size_t cap)
{
	size_t n = rt_strlen(src);
	if (cap) {
		size_t k = n < cap - 1 ? n : cap - 1;
		rt_memcpy(dst, src, k);
		dst[k] = 0;
	}
	return n;
}

static char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c; }

bool rt_eq_nocase(const char *s, size_t n, const char *lit)
{
	size_t i = 0;
	for (; i < n; i++) {
		if (!lit[i] || ascii_lower(s[i]) != ascii_lower(lit[i]))
			return false;
	}
	return lit[i] == 0;
}

bool rt_parse_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 20)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool rt_parse_i64(const char *s, size_t n, int64_t *out)
{
	bool neg = n > 0 && s[0] == '-';
	uint64_t v;
	if (!rt_parse_u64(s + neg, n - neg, &v))
		return false;
	if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

int rt_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool rt_parse_hex_u64(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 16)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = rt_hex_digit((unsigned char)s[i]);
		if (d < 0)
			return false;
		v = (v << 4) | (unsigned)d;
	}
	*out = v;
	return true;
}
