/* Demangler entry point and Rust legacy names (see demangle.h). */
#include "demangle/demangle.h"

#include <stdbool.h>

static bool hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }
static bool dec_digit(char c) { return c >= '0' && c <= '9'; }

/* Rust legacy escapes inside one component: $LT$ -> <, $u20$ -> ' ', .. -> :: */
struct escape {
	const char *code;
	char c;
};
static const struct escape escapes[] = {
	{"SP", '@'}, {"BP", '*'}, {"RF", '&'}, {"LT", '<'}, {"GT", '>'}, {"LP", '('}, {"RP", ')'}, {"C", ','},
};

struct out {
	char *buf;
	size_t cap, len;
	bool fail;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (n >= o->cap - o->len) {
		o->fail = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		o->buf[o->len++] = s[i];
}

static int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

/* Decodes one legacy component; false if it is not valid legacy Rust. */
static bool legacy_component(struct out *o, const char *s, size_t n)
{
	size_t i = 0;
	if (n >= 2 && s[0] == '_' && s[1] == '$')
		i = 1; /* a leading '_' only protects the '$' */
	while (i < n && !o->fail) {
		if (s[i] == '.' && i + 1 < n && s[i + 1] == '.') {
			put(o, "::", 2);
			i += 2;
		} else if (s[i] == '$') {
			size_t end = i + 1;
			while (end < n && s[end] != '$' && end - i < 8)
				end++;
			if (end >= n || s[end] != '$')
				return false;
			const char *code = s + i + 1;
			size_t clen = end - i - 1;
			bool done = false;
			if (clen >= 2 && code[0] == 'u') {
				unsigned v = 0;
				for (size_t k = 1; k < clen; k++) {
					if (!hex_digit(code[k]) || v > 0x10ffff)
						return false;
					v = v * 16 + (unsigned)hex_value(code[k]);
				}
				if (v < 0x20 || v > 0x7e)
					return false;
				char ch = (char)v;
				put(o, &ch, 1);
				done = true;
			}
			for (size_t k = 0; !done && k < sizeof(escapes) / sizeof(escapes[0]); k++) {
				size_t el = escapes[k].code[1] ? 2 : 1;
				if (clen == el && code[0] == escapes[k].code[0] &&
				    (el == 1 || code[1] == escapes[k].code[1])) {
					put(o, &escapes[k].c, 1);
					done = true;
				}
			}
			if (!done)
				return false;
			i = end + 1;
		} else {
			put(o, s + i, 1);
			i++;
		}
	}
	return !o->fail;
}

/* True when s[0..n) is "h" and 16 lowercase hex digits. */
static bool is_rust_hash(const char *s, size_t n)
{
	if (n != 17 || s[0] != 'h')
		return false;
	for (size_t i = 1; i < n; i++)
		if (!hex_digit(s[i]))
			return false;
	return true;
}

size_t demangle_rust_legacy(const char *name, size_t len, char *out, size_t cap)
{
	struct out o = {out, cap, 0, false};
	if (cap == 0)
		return 0;
	out[0] = 0;
	if (len < 4 || len > DEMANGLE_MAX_INPUT || name[0] != '_' || name[1] != 'Z' || name[2] != 'N')
		return 0;
	size_t i = 3, count = 0;
	bool hashed = false;
	while (i < len && name[i] != 'E') {
		size_t n = 0, digits = 0;
		while (i < len && dec_digit(name[i]) && digits < 6) {
			n = n * 10 + (size_t)(name[i] - '0');
			i++;
			digits++;
		}
		if (digits == 0 || n == 0 || n > len - i)
			return 0;
		if (is_rust_hash(name + i, n) && i + n < len && name[i + n] == 'E') {
			hashed = true; /* dropped, as rustfilt and perf do */
		} else {
			if (count++ > 0)
				put(&o, "::", 2);
			if (!legacy_component(&o, name + i, n))
				return 0;
		}
		i += n;
	}
	if (!hashed || count == 0 || i >= len || name[i] != 'E' || o.fail)
		return 0;
	i++;
	/* rustc adds ".llvm.<digits>" to some local symbols: not part of the name. */
	if (i < len && name[i] != '.')
		return 0;
	out[o.len] = 0;
	return o.len;
}

/* True when a legacy hash "17h<16 hex>E" could end at s[e] (the 'E'), as
 * demangle_rust_legacy requires of every name it reads. */
static bool hash_ends_at(const char *s, size_t e)
{
	return e >= 20 && s[e] == 'E' && s[e - 17] == 'h' && s[e - 18] == '7' && s[e - 19] == '1';
}

/* The length of s (past DEMANGLE_MAX_INPUT when longer), and whether a
 * legacy hash ends before its end or before one of its dots: without one,
 * demangle_rust_legacy gives 0, so it is not called.  The bytes of mangled
 * names are mostly letters, digits and '_', all above '.'. */
static size_t scan_name(const char *s, bool *legacy)
{
	size_t n = 0;
	*legacy = false;
	for (;;) {
		/* Eight bytes a step; each byte is read only after the one
		 * before it is known not to be the NUL. */
		while (n + 8 <= DEMANGLE_MAX_INPUT && (unsigned char)s[n] > '.' &&
		       (unsigned char)s[n + 1] > '.' && (unsigned char)s[n + 2] > '.' &&
		       (unsigned char)s[n + 3] > '.' && (unsigned char)s[n + 4] > '.' &&
		       (unsigned char)s[n + 5] > '.' && (unsigned char)s[n + 6] > '.' &&
		       (unsigned char)s[n + 7] > '.')
			n += 8;
		while (n <= DEMANGLE_MAX_INPUT && (unsigned char)s[n] > '.')
			n++;
		if (n > DEMANGLE_MAX_INPUT)
			return n;
		if (s[n] == 0)
			break;
		if (s[n] == '.' && n > 0 && hash_ends_at(s, n - 1))
			*legacy = true;
		n++;
	}
	if (n > 0 && hash_ends_at(s, n - 1))
		*legacy = true;
	return n;
}

size_t demangle(const char *name, char *out, size_t cap, struct demangle_scratch *scratch)
{
	if (cap > 0)
		out[0] = 0;
	if (name == 0 || cap == 0 || name[0] != '_')
		return 0;
	bool legacy;
	size_t len = scan_name(name, &legacy);
	if (len > DEMANGLE_MAX_INPUT)
		return 0;
	if (name[1] == 'R')
		return demangle_rust_v0(name, len, out, cap, scratch);
	if (name[1] != 'Z')
		return 0;
	size_t n = legacy ? demangle_rust_legacy(name, len, out, cap) : 0;
	return n ? n : demangle_itanium(name, len, out, cap, scratch);
}
