/* Rust v0 symbol demangler (see demangle.h): the grammar of RFC 2603,
 * printed as rustfilt and llvm-cxxfilt print it (no crate hashes, generic
 * arguments of value paths as ::<...>).
 *
 * Printing follows parse order, so the result is written while parsing; the
 * impl path of an impl block is parsed silently.  Recursion in the grammar
 * (paths in paths, types in types, back references) runs on an explicit
 * stack of DEMANGLE_MAX_DEPTH frames; a back reference must point before
 * the reference itself, so the walk ends. */
#include "demangle/demangle.h"

#include <stdbool.h>

enum v0_rule { V_PATH, V_TYPE, V_ARG, V_CONST };

struct v0 {
	const char *s;
	uint32_t n, pos;
	char *out;
	size_t cap, len;
	uint32_t quiet; /* > 0: parse without printing */
	bool fail;
	uint32_t (*frames)[6];
	uint32_t nframes;
	uint32_t bound_lifetimes; /* lifetimes bound by enclosing for<...> */
	bool open_generics;       /* the last path's generic args were left open */
};

#define PATH_VALUE 1u     /* generic args print as ::<...> */
#define PATH_KEEP_OPEN 2u /* leave the generic args open (dyn Trait<..., Assoc = T>) */

static char v_peek(const struct v0 *v) { return v->pos < v->n ? v->s[v->pos] : 0; }
static bool v_digit(char c) { return c >= '0' && c <= '9'; }
static bool v_lower(char c) { return c >= 'a' && c <= 'z'; }
static bool v_upper(char c) { return c >= 'A' && c <= 'Z'; }

static void v_put(struct v0 *v, const char *s, size_t n)
{
	if (v->quiet)
		return;
	if (n >= v->cap - v->len) {
		v->fail = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		v->out[v->len++] = s[i];
}

static void v_puts(struct v0 *v, const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	v_put(v, s, n);
}

static void v_put_u64(struct v0 *v, uint64_t x)
{
	char rev[24];
	uint32_t k = 0;
	do {
		rev[k++] = (char)('0' + x % 10);
		x /= 10;
	} while (x && k < sizeof(rev));
	while (k > 0)
		v_put(v, &rev[--k], 1);
}

/* <base-62-number> = {0-9a-zA-Z} "_": "_" is 0, else the value plus one. */
static bool base62(struct v0 *v, uint64_t *out)
{
	if (v_peek(v) == '_') {
		v->pos++;
		*out = 0;
		return true;
	}
	uint64_t x = 0;
	for (uint32_t i = 0; i < 12; i++) {
		char c = v_peek(v);
		uint64_t d;
		if (v_digit(c))
			d = (uint64_t)(c - '0');
		else if (v_lower(c))
			d = (uint64_t)(c - 'a') + 10;
		else if (v_upper(c))
			d = (uint64_t)(c - 'A') + 36;
		else if (c == '_') {
			v->pos++;
			*out = x + 1;
			return true;
		} else
			return false;
		x = x * 62 + d;
		v->pos++;
	}
	return false;
}

/* [s <base-62-number>] */
static bool disambiguator(struct v0 *v, uint64_t *out)
{
	*out = 0;
	if (v_peek(v) != 's')
		return true;
	v->pos++;
	uint64_t d;
	if (!base62(v, &d))
		return false;
	*out = d + 1;
	return true;
}

/* <undisambiguated-identifier> = ["u"] <decimal> ["_"] <bytes>; punycode
 * ("u") is refused. */
static bool ident(struct v0 *v, const char **s, uint32_t *len)
{
	if (v_peek(v) == 'u' || !v_digit(v_peek(v)))
		return false;
	uint32_t n = 0;
	if (v_peek(v) == '0') {
		v->pos++;
	} else {
		while (v_digit(v_peek(v))) {
			if (n > 100000)
				return false;
			n = n * 10 + (uint32_t)(v_peek(v) - '0');
			v->pos++;
		}
	}
	if (v_peek(v) == '_')
		v->pos++;
	if (n > v->n - v->pos)
		return false;
	*s = v->s + v->pos;
	*len = n;
	v->pos += n;
	return true;
}

/* A lifetime by index: 0 is erased, else counted back from the innermost
 * binder: 'a, 'b, ... */
static void v_lifetime(struct v0 *v, uint64_t lt)
{
	if (lt == 0) {
		v_puts(v, "'_");
		return;
	}
	if (lt > v->bound_lifetimes || v->bound_lifetimes - lt >= 26) {
		v->fail = true;
		return;
	}
	char name[2] = {'\'', (char)('a' + (v->bound_lifetimes - lt))};
	v_put(v, name, 2);
}

/* [G <base-62-number>]: binds that many lifetimes plus one, printed
 * "for<'a, 'b> ".  Returns the previous depth to restore. */
static uint32_t v_binder(struct v0 *v)
{
	uint32_t before = v->bound_lifetimes;
	if (v_peek(v) != 'G')
		return before;
	v->pos++;
	uint64_t n;
	if (!base62(v, &n) || n + 1 > 26 - before) {
		v->fail = true;
		return before;
	}
	v_puts(v, "for<");
	for (uint64_t i = 0; i <= n; i++) {
		if (i > 0)
			v_puts(v, ", ");
		v->bound_lifetimes++;
		v_lifetime(v, 1);
	}
	v_puts(v, "> ");
	return before;
}

static void v_call(struct v0 *v, uint32_t rule, uint32_t arg)
{
	if (v->nframes >= DEMANGLE_MAX_DEPTH) {
		v->fail = true;
		return;
	}
	uint32_t *f = v->frames[v->nframes++];
	f[0] = rule;
	f[1] = 0;
	f[2] = arg;
	f[3] = f[4] = f[5] = 0;
}

static void v_done(struct v0 *v) { v->nframes--; }

/* B <base-62-number>: continue at an earlier position, then come back. */
static bool backref(struct v0 *v, uint32_t *f, uint32_t rule, uint32_t arg)
{
	uint32_t at = v->pos;
	v->pos++;
	uint64_t target;
	if (!base62(v, &target) || target + 2 >= at) {
		v->fail = true;
		return false;
	}
	f[1] = 99;    /* on return: restore the position */
	f[5] = v->pos;
	v->pos = (uint32_t)target + 2; /* offsets count from after "_R" */
	v_call(v, rule, arg);
	return true;
}

static const char *basic_type(char c)
{
	switch (c) {
	case 'a': return "i8";
	case 'b': return "bool";
	case 'c': return "char";
	case 'd': return "f64";
	case 'e': return "str";
	case 'f': return "f32";
	case 'h': return "u8";
	case 'i': return "isize";
	case 'j': return "usize";
	case 'l': return "i32";
	case 'm': return "u32";
	case 'n': return "i128";
	case 'o': return "u128";
	case 's': return "i16";
	case 't': return "u16";
	case 'u': return "()";
	case 'v': return "...";
	case 'x': return "i64";
	case 'y': return "u64";
	case 'z': return "!";
	case 'p': return "_";
	default: return 0;
	}
}

/* f[2]: 1 = a value path (generic args print as ::<>); f[3]: tag; f[4]: namespace or count. */
static void step_path(struct v0 *v, uint32_t *f)
{
	char tag = (char)f[3];
	switch (f[1]) {
	case 0: {
		char c = v_peek(v);
		uint64_t dis;
		if (c == 'B') {
			(void)backref(v, f, V_PATH, f[2]);
			return;
		}
		v->pos++;
		f[3] = (uint32_t)(unsigned char)c;
		v->open_generics = false;
		if (c == 'C') {
			const char *s;
			uint32_t n;
			if (!disambiguator(v, &dis) || !ident(v, &s, &n)) {
				v->fail = true;
				return;
			}
			v_put(v, s, n);
			v_done(v);
		} else if (c == 'M' || c == 'X') {
			if (!disambiguator(v, &dis)) {
				v->fail = true;
				return;
			}
			v->quiet++; /* the impl's own path is not printed */
			f[1] = 1;
			v_call(v, V_PATH, 0);
			f[2] &= ~PATH_KEEP_OPEN;
		} else if (c == 'Y') {
			v_put(v, "<", 1);
			f[1] = 2;
			v_call(v, V_TYPE, 0);
		} else if (c == 'N') {
			char ns = v_peek(v);
			if (!v_lower(ns) && !v_upper(ns)) {
				v->fail = true;
				return;
			}
			v->pos++;
			f[4] = (uint32_t)(unsigned char)ns;
			f[2] &= ~PATH_KEEP_OPEN;
			f[1] = 4;
			v_call(v, V_PATH, f[2]);
		} else if (c == 'I') {
			f[1] = 5;
			v_call(v, V_PATH, f[2] & ~PATH_KEEP_OPEN);
		} else {
			v->fail = true;
		}
		return;
	}
	case 1: /* after the impl path of M/X */
		v->quiet--;
		v_put(v, "<", 1);
		f[1] = 2;
		v_call(v, V_TYPE, 0);
		return;
	case 2:
		if (tag == 'M') {
			v_put(v, ">", 1);
			v_done(v);
			return;
		}
		v_puts(v, " as ");
		f[1] = 3;
		v_call(v, V_PATH, 0);
		return;
	case 3:
		v_put(v, ">", 1);
		v_done(v);
		return;
	case 4: { /* N: the identifier after the parent path */
		uint64_t dis;
		const char *s;
		uint32_t n;
		if (!disambiguator(v, &dis) || !ident(v, &s, &n)) {
			v->fail = true;
			return;
		}
		char ns = (char)f[4];
		if (v_upper(ns)) {
			v_puts(v, "::{");
			if (ns == 'C')
				v_puts(v, "closure");
			else if (ns == 'S')
				v_puts(v, "shim");
			else
				v_put(v, &ns, 1);
			if (n > 0) {
				v_put(v, ":", 1);
				v_put(v, s, n);
			}
			v_put(v, "#", 1);
			v_put_u64(v, dis);
			v_put(v, "}", 1);
		} else if (n > 0) {
			v_put(v, "::", 2);
			v_put(v, s, n);
		}
		v_done(v);
		return;
	}
	case 5: /* I: generic arguments after the path */
		v_puts(v, (f[2] & PATH_VALUE) ? "::<" : "<");
		f[1] = 6;
		return;
	case 6:
		if (v_peek(v) == 'E') {
			v->pos++;
			if (f[2] & PATH_KEEP_OPEN)
				v->open_generics = true;
			else
				v_put(v, ">", 1);
			v_done(v);
			return;
		}
		if (v_peek(v) == 0) {
			v->fail = true;
			return;
		}
		if (f[4]++ > 0)
			v_puts(v, ", ");
		v_call(v, V_ARG, 0);
		return;
	default: /* 99: back from a back reference */
		v->pos = f[5];
		v_done(v);
	}
}

/* f[3]: tag; f[4]: count of tuple members or fn params. */
static void step_type(struct v0 *v, uint32_t *f)
{
	switch (f[1]) {
	case 0: {
		char c = v_peek(v);
		const char *b = basic_type(c);
		if (b) {
			v->pos++;
			v_puts(v, b);
			v_done(v);
			return;
		}
		if (c == 'B') {
			(void)backref(v, f, V_TYPE, 0);
			return;
		}
		f[3] = (uint32_t)(unsigned char)c;
		switch (c) {
		case 'R':
		case 'Q': {
			v->pos++;
			v_put(v, "&", 1);
			if (v_peek(v) == 'L') {
				uint64_t lt;
				v->pos++;
				if (!base62(v, &lt)) {
					v->fail = true;
					return;
				}
				if (lt != 0) {
					v_lifetime(v, lt);
					v_put(v, " ", 1);
				}
			}
			if (c == 'Q')
				v_puts(v, "mut ");
			f[1] = 9;
			v_call(v, V_TYPE, 0);
			return;
		}
		case 'P':
		case 'O':
			v->pos++;
			v_puts(v, c == 'P' ? "*const " : "*mut ");
			f[1] = 9;
			v_call(v, V_TYPE, 0);
			return;
		case 'A':
		case 'S':
			v->pos++;
			v_put(v, "[", 1);
			f[1] = c == 'A' ? 2 : 3;
			v_call(v, V_TYPE, 0);
			return;
		case 'T':
			v->pos++;
			v_put(v, "(", 1);
			f[1] = 4;
			return;
		case 'F': {
			v->pos++;
			f[5] = v_binder(v);
			if (v_peek(v) == 'U') {
				v->pos++;
				v_puts(v, "unsafe ");
			}
			if (v_peek(v) == 'K') {
				v->pos++;
				if (v_peek(v) == 'C') {
					v->pos++;
					v_puts(v, "extern \"C\" ");
				} else {
					const char *s;
					uint32_t n;
					if (!ident(v, &s, &n)) {
						v->fail = true;
						return;
					}
					v_puts(v, "extern \"");
					for (uint32_t i = 0; i < n; i++)
						v_put(v, s[i] == '_' ? "-" : s + i, 1);
					v_puts(v, "\" ");
				}
			}
			v_puts(v, "fn(");
			f[1] = 5;
			return;
		}
		case 'D': {
			v->pos++;
			v_puts(v, "dyn ");
			f[5] = v_binder(v);
			f[1] = 7;
			return;
		}
		default:
			f[1] = 9;
			v_call(v, V_PATH, 0);
			return;
		}
	}
	case 2: /* [T; N] */
		v_puts(v, "; ");
		f[1] = 3;
		v_call(v, V_CONST, 0);
		return;
	case 3:
		v_put(v, "]", 1);
		v_done(v);
		return;
	case 4: /* tuple members */
		if (v_peek(v) == 'E') {
			v->pos++;
			v_puts(v, f[4] == 1 ? ",)" : ")");
			v_done(v);
			return;
		}
		if (v_peek(v) == 0) {
			v->fail = true;
			return;
		}
		if (f[4]++ > 0)
			v_puts(v, ", ");
		v_call(v, V_TYPE, 0);
		return;
	case 5: /* fn parameters, then the return type */
		if (v_peek(v) == 'E') {
			v->pos++;
			v_put(v, ")", 1);
			if (v_peek(v) == 'u') {
				v->pos++;
				v->bound_lifetimes = f[5];
				v_done(v);
				return;
			}
			v_puts(v, " -> ");
			f[1] = 6;
			v_call(v, V_TYPE, 0);
			return;
		}
		if (v_peek(v) == 0) {
			v->fail = true;
			return;
		}
		if (f[4]++ > 0)
			v_puts(v, ", ");
		v_call(v, V_TYPE, 0);
		return;
	case 6: /* after a fn's return type */
		v->bound_lifetimes = f[5];
		v_done(v);
		return;
	case 7: /* dyn traits, then a lifetime */
		if (v_peek(v) == 'E') {
			uint64_t lt;
			v->pos++;
			v->bound_lifetimes = f[5];
			if (v_peek(v) != 'L') {
				v->fail = true;
				return;
			}
			v->pos++;
			if (!base62(v, &lt)) {
				v->fail = true;
				return;
			}
			if (lt != 0) {
				v_puts(v, " + ");
				v_lifetime(v, lt);
			}
			v_done(v);
			return;
		}
		if (v_peek(v) == 0) {
			v->fail = true;
			return;
		}
		if (f[4]++ > 0)
			v_puts(v, " + ");
		f[1] = 8;
		v_call(v, V_PATH, PATH_KEEP_OPEN);
		return;
	case 8: /* after a dyn trait's path: associated type bindings */
		if (f[3] == 'D') /* just back from the path: were its generics left open? */
			f[3] = v->open_generics ? 'o' : 'c';
		v->open_generics = false;
		if (v_peek(v) == 'p') {
			const char *s;
			uint32_t n;
			v->pos++;
			if (!ident(v, &s, &n)) {
				v->fail = true;
				return;
			}
			v_puts(v, f[3] == 'o' ? ", " : "<");
			f[3] = 'o';
			v_put(v, s, n);
			v_puts(v, " = ");
			v_call(v, V_TYPE, 0);
			return;
		}
		if (f[3] == 'o')
			v_put(v, ">", 1);
		f[3] = 'D';
		f[1] = 7;
		return;
	case 99:
		v->pos = f[5];
		v_done(v);
		return;
	default: /* 9: the inner type or path was printed */
		v_done(v);
	}
}

static void step_arg(struct v0 *v, uint32_t *f)
{
	char c = v_peek(v);
	v_done(v);
	(void)f;
	if (c == 'L') {
		uint64_t lt;
		v->pos++;
		if (!base62(v, &lt)) {
			v->fail = true;
			return;
		}
		v_lifetime(v, lt);
	} else if (c == 'K') {
		v->pos++;
		v_call(v, V_CONST, 0);
	} else {
		v_call(v, V_TYPE, 0);
	}
}

static void step_const(struct v0 *v, uint32_t *f)
{
	if (f[1] == 99) {
		v->pos = f[5];
		v_done(v);
		return;
	}
	char c = v_peek(v);
	if (c == 'B') {
		(void)backref(v, f, V_CONST, 0);
		return;
	}
	v->pos++;
	if (c == 'p') {
		v_put(v, "_", 1);
		v_done(v);
		return;
	}
	bool neg = false;
	if (v_peek(v) == 'n') {
		neg = true;
		v->pos++;
	}
	uint64_t x = 0;
	uint32_t digits = 0;
	while (v_peek(v) != '_') {
		char h = v_peek(v);
		uint64_t d;
		if (v_digit(h))
			d = (uint64_t)(h - '0');
		else if (h >= 'a' && h <= 'f')
			d = (uint64_t)(h - 'a') + 10;
		else {
			v->fail = true;
			return;
		}
		if (++digits > 16) {
			v->fail = true;
			return;
		}
		x = x << 4 | d;
		v->pos++;
	}
	v->pos++;
	v_done(v);
	if (c == 'b') {
		if (x > 1 || neg)
			v->fail = true;
		else
			v_puts(v, x ? "true" : "false");
		return;
	}
	if (c == 'c') {
		if (x < 0x20 || x > 0x7e || neg || x == '\'' || x == '\\') {
			v->fail = true;
			return;
		}
		char ch = (char)x;
		v_put(v, "'", 1);
		v_put(v, &ch, 1);
		v_put(v, "'", 1);
		return;
	}
	const char *t = basic_type(c);
	if (t == 0 || c == 'd' || c == 'e' || c == 'f' || c == 'u' || c == 'v' || c == 'z' || c == 'p') {
		v->fail = true;
		return;
	}
	if (neg)
		v_put(v, "-", 1);
	v_put_u64(v, x);
}

/* Runs the rules until the stack empties.  Each step consumes input, pushes
 * a frame or pops one, and back references only go backwards, so the
 * bound is a second guard. */
static void v_run(struct v0 *v)
{
	uint32_t budget = 16u * DEMANGLE_MAX_INPUT + 4096u;
	while (!v->fail && v->nframes > 0) {
		if (budget-- == 0) {
			v->fail = true;
			return;
		}
		uint32_t *f = v->frames[v->nframes - 1];
		switch (f[0]) {
		case V_PATH: step_path(v, f); break;
		case V_TYPE: step_type(v, f); break;
		case V_ARG: step_arg(v, f); break;
		case V_CONST: step_const(v, f); break;
		default: v->fail = true;
		}
	}
}

size_t demangle_rust_v0(const char *name, size_t len, char *out, size_t cap,
			struct demangle_scratch *w)
{
	if (cap > 0)
		out[0] = 0;
	if (len < 3 || len > DEMANGLE_MAX_INPUT || name[0] != '_' || name[1] != 'R' || cap == 0)
		return 0;
	struct v0 v = {name, (uint32_t)len, 2, out, cap, 0, 0, false, w->frames, 0, 0, false};
	if (!v_upper(v_peek(&v)))
		return 0; /* an encoding version, or not v0 */
	v_call(&v, V_PATH, PATH_VALUE);
	v_run(&v);
	/* What may follow: the instantiating crate (a path) and a vendor
	 * suffix (".llvm.1234"); neither is printed. */
	if (!v.fail && v.nframes == 0 && v.pos < v.n && v.s[v.pos] != '.') {
		v.quiet = 1;
		v_call(&v, V_PATH, 0);
		v_run(&v);
	}
	if (v.fail || v.nframes > 0 || (v.pos < v.n && v.s[v.pos] != '.')) {
		out[0] = 0;
		return 0;
	}
	if (v.pos < v.n) { /* ".llvm.123" and the like, as llvm-cxxfilt shows them */
		v.quiet = 0;
		v_puts(&v, " (");
		v_put(&v, v.s + v.pos, v.n - v.pos);
		v_put(&v, ")", 1);
		if (v.fail) {
			out[0] = 0;
			return 0;
		}
	}
	out[v.len] = 0;
	return v.len;
}
