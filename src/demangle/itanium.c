/* Itanium C++ ABI demangler (see demangle.h).
 *
 * The grammar is recursive; the parser is not: each rule is a step function
 * over a frame {rule, state, value base, x, y, z} on an explicit stack of
 * DEMANGLE_MAX_DEPTH frames.  A step either consumes input, pushes a child
 * frame, or finishes its rule (pushing one node on the value stack), so the
 * number of steps is bounded by a multiple of the input length.  The result
 * is a tree of nodes in a fixed arena, printed by a second explicit-stack
 * walk.  Printing follows GNU c++filt (binutils): "> >", "[clone .cold]",
 * std::string spelled out as basic_string<...>, expressions with its
 * parentheses.  Template parameters are resolved when read (T_ becomes the
 * argument's node); a pack expansion in an expression keeps the pack it
 * refers to and prints its pattern once per element. */
#include "demangle/demangle.h"

#include <stdbool.h>

#define NONE 0xffffffffu

enum node_kind {
	N_STR,      /* s[0..len) */
	N_NESTED,   /* a::b */
	N_TEMPLATE, /* a<list b> */
	N_LIST,     /* lists[a .. a+b) joined by ", " */
	N_QUAL,     /* a const volatile restrict */
	N_PTR,      /* a followed by s ("*", "&", "&&") */
	N_FUNC,     /* function type: a = return, b = params list, quals, c = ref */
	N_ARRAY,    /* a = element, s[0..len) = dimension */
	N_ENC,      /* [a ]b(c) quals ref: a function */
	N_PREFIX,   /* s a */
	N_SUFFIX,   /* a s */
	N_ABI,      /* a[abi:s] */
	N_PACK,     /* a... */
	N_MEMPTR,   /* member pointer: a = class, b = member type */
	N_LAMBDA,   /* {lambda(list b)#a} */
	N_CAST,     /* (a)s */
	N_INFIX,    /* a s b */
	N_VECTOR,   /* a __vector(c): GCC vector of element a, dimension c */
	N_VQUAL,    /* a b: vendor qualifier b (a name, or name<args>) on type a */
	/* Expressions (template arguments, decltype): */
	N_UNARY,    /* operator s on a, printed as flags (U_*) says */
	N_BINARY,   /* a s b, printed as flags (B_*) says */
	N_TERNARY,  /* a ? b : c */
	N_NEW,      /* new (placement list a) type b (initializer c) */
	N_FOLD,     /* fold of a [and b] over operator s; flags: 'l' 'r' 'L' 'R' */
	N_DESIG,    /* designated initializer; flags: 'i' .a=c, 'x' [a]=c, 'X' [a ... b]=c */
	N_BRACE,    /* type a (or none) {list b} */
	N_EXPAND,   /* pack expansion of pattern a over pack c (a list), or "a..." */
	N_DECLTYPE, /* decltype (a) */
	N_VENDOR,   /* vendor expression a(list b) */
	N_TPARAM,   /* a substitution that is template parameter c (a: its value then) */
};

/* An N_STR that prints as an operand without parentheses (a name,
 * {parm#N}): c++filt's "simple" sub-expressions. */
#define NF_SIMPLE 0x100u
/* An N_STR "auto:N" for a generic lambda's T_ (c = the index): used
 * again as a substitution outside the lambda, it is that template arg. */
#define NF_LAMBDA_PARM 0x200u

enum { U_PREFIX, U_SUFFIX, U_PARENS, U_BARE, U_CAST };
enum { B_PLAIN, B_GT, B_CALL, B_INDEX, B_NEWCAST };

#define Q_CONST 1u
#define Q_VOLATILE 2u
#define Q_RESTRICT 4u

enum rule { R_ENCODING, R_NAME, R_NESTED, R_LOCAL, R_UNQUAL, R_TYPE, R_TARGS, R_EXPR, R_EXPRLIST };

struct parser {
	const char *s;
	uint32_t n, pos;
	struct demangle_scratch *w;
	uint32_t nnodes, nvalues, nlists, nsubs, nframes, ntext;
	uint32_t tparams;    /* list node of the template args T_ refers to, or NONE */
	uint32_t tp_owner;   /* frame depth whose template args become tparams */
	uint32_t in_lambda;  /* inside a lambda's signature: T_ is auto:N */
	uint32_t last_tparam; /* the index of the template parameter read last */
	bool ref_operand;     /* the type read next is under & or && */
	bool qual_operand;    /* the type read next is under cv-qualifiers */
	bool sub_keep;        /* the substitution read next is under & or && */
	bool sr_levels;	     /* sr <name> is sr <qualifier-level>+ E (not sr <type>) */
	bool sr_levels_read; /* ... and one was read so */
	bool fail;
	/* Facts about the name just parsed, for the encoding that owns it. */
	bool name_template, name_ctor;
	uint8_t name_quals, name_ref;
};

/* ---- small helpers (no libc) ---- */

static uint32_t str_len(const char *s)
{
	const char *e = s;
	while (*e && e - s < (long)DEMANGLE_MAX_INPUT)
		e++;
	return (uint32_t)(e - s);
}

static bool bytes_eq(const char *a, const char *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

static char peek(const struct parser *p) { return p->pos < p->n ? p->s[p->pos] : 0; }
static char peek_at(const struct parser *p, uint32_t k)
{
	return p->pos + k < p->n ? p->s[p->pos + k] : 0;
}
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

static uint32_t node_new(struct parser *p, uint8_t kind)
{
	if (p->nnodes >= DEMANGLE_MAX_NODES) {
		p->fail = true;
		return NONE;
	}
	struct demangle_node *d = &p->w->nodes[p->nnodes];
	d->kind = kind;
	d->quals = 0;
	d->flags = 0;
	d->a = d->b = d->c = NONE;
	d->s = "";
	d->len = 0;
	return p->nnodes++;
}

static struct demangle_node *nd(struct parser *p, uint32_t i) { return &p->w->nodes[i]; }

static uint32_t mk_str(struct parser *p, const char *s, uint32_t len)
{
	uint32_t i = node_new(p, N_STR);
	if (i != NONE) {
		nd(p, i)->s = s;
		nd(p, i)->len = len;
	}
	return i;
}

static uint32_t mk_cstr(struct parser *p, const char *s) { return mk_str(p, s, str_len(s)); }

static uint32_t mk2(struct parser *p, uint8_t kind, uint32_t a, uint32_t b)
{
	if (a == NONE && kind != N_ENC && kind != N_FUNC && kind != N_LAMBDA) {
		p->fail = true;
		return NONE;
	}
	uint32_t i = node_new(p, kind);
	if (i != NONE) {
		nd(p, i)->a = a;
		nd(p, i)->b = b;
	}
	return i;
}

static uint32_t mk_s(struct parser *p, uint8_t kind, uint32_t a, const char *s, uint32_t len)
{
	uint32_t i = mk2(p, kind, a, NONE);
	if (i != NONE) {
		nd(p, i)->s = s;
		nd(p, i)->len = len;
	}
	return i;
}

/* Copies bytes into the text arena; returns them or NULL. */
static const char *text_put(struct parser *p, const char *s, uint32_t len)
{
	if (len > sizeof(p->w->text) - p->ntext) {
		p->fail = true;
		return 0;
	}
	char *d = p->w->text + p->ntext;
	for (uint32_t i = 0; i < len; i++)
		d[i] = s[i];
	p->ntext += len;
	return d;
}

/* A node for a short composed text (pieces concatenated). */
static uint32_t mk_text3(struct parser *p, const char *a, uint32_t na, const char *b, uint32_t nb,
			 const char *c, uint32_t nc)
{
	uint32_t start = p->ntext;
	if (!text_put(p, a, na) || !text_put(p, b, nb) || !text_put(p, c, nc))
		return NONE;
	return mk_str(p, p->w->text + start, p->ntext - start);
}

static void push_value(struct parser *p, uint32_t v)
{
	if (p->nvalues >= DEMANGLE_MAX_NODES || (v == NONE && p->fail)) {
		p->fail = true;
		return;
	}
	p->w->values[p->nvalues++] = v;
}

static uint32_t pop_value(struct parser *p, uint32_t base)
{
	if (p->nvalues <= base) {
		p->fail = true;
		return NONE;
	}
	return p->w->values[--p->nvalues];
}

/* A list node of values[from .. nvalues), which are popped. */
static uint32_t mk_list(struct parser *p, uint32_t from)
{
	uint32_t count = p->nvalues - from;
	if (count > DEMANGLE_MAX_NODES - p->nlists) {
		p->fail = true;
		return NONE;
	}
	uint32_t start = p->nlists;
	for (uint32_t i = 0; i < count; i++)
		p->w->lists[p->nlists++] = p->w->values[from + i];
	p->nvalues = from;
	uint32_t l = node_new(p, N_LIST);
	if (l != NONE) {
		nd(p, l)->a = start;
		nd(p, l)->b = count;
	}
	return l;
}

/* Parameter lists of one "void" print as (). */
static void drop_lone_void(struct parser *p, uint32_t list)
{
	if (list == NONE)
		return;
	struct demangle_node *l = nd(p, list);
	if (l->b == 1) {
		struct demangle_node *t = nd(p, p->w->lists[l->a]);
		if (t->kind == N_STR && t->len == 4 && bytes_eq(t->s, "void", 4) && t->flags == 1)
			l->b = 0;
	}
}

static void add_sub(struct parser *p, uint32_t node)
{
	if (node == NONE || p->nsubs >= DEMANGLE_MAX_NODES) {
		p->fail = true;
		return;
	}
	p->w->subs[p->nsubs++] = node;
}

/* A template parameter as a substitution: resolved again where used. */
static void add_tparam_sub(struct parser *p, uint32_t value)
{
	uint32_t n = mk2(p, N_TPARAM, value, NONE);
	if (n != NONE)
		nd(p, n)->c = p->last_tparam;
	add_sub(p, n);
}

static void call(struct parser *p, uint32_t rule)
{
	if (p->nframes >= DEMANGLE_MAX_DEPTH) {
		p->fail = true;
		return;
	}
	uint32_t *f = p->w->frames[p->nframes++];
	f[0] = rule;
	f[1] = 0;
	f[2] = p->nvalues;
	f[3] = f[4] = f[5] = 0;
}

/* Finishes the current rule with `node` as its value. */
static void ret(struct parser *p, uint32_t node)
{
	uint32_t *f = p->w->frames[p->nframes - 1];
	if (node == NONE) {
		p->fail = true;
		return;
	}
	p->nvalues = f[2];
	p->nframes--;
	push_value(p, node);
}

/* <number> ::= [n] <digits>; value capped (only used for counts). */
static bool number(struct parser *p, uint32_t *v, bool *neg)
{
	/* Local copies: stores through p->w could alias p's fields. */
	const char *s = p->s;
	uint32_t pos = p->pos, n = p->n;
	*neg = false;
	if (pos < n && s[pos] == 'n') {
		*neg = true;
		pos++;
	}
	if (pos >= n || !is_digit(s[pos])) {
		p->pos = pos;
		return false;
	}
	uint32_t x = 0;
	while (pos < n && is_digit(s[pos])) {
		if (x < 100000000u)
			x = x * 10u + (uint32_t)(s[pos] - '0');
		pos++;
	}
	p->pos = pos;
	*v = x;
	return true;
}

/* <source-name> ::= <length> <identifier> */
static uint32_t source_name(struct parser *p)
{
	uint32_t len;
	bool neg;
	if (!number(p, &len, &neg) || neg || len == 0 || len > p->n - p->pos) {
		p->fail = true;
		return NONE;
	}
	const char *id = p->s + p->pos;
	p->pos += len;
	if (len >= 10 && bytes_eq(id, "_GLOBAL_", 8) && (id[8] == '_' || id[8] == '.' || id[8] == '$') &&
	    id[9] == 'N')
		id = "(anonymous namespace)", len = 21;
	uint32_t n = mk_str(p, id, len);
	if (n != NONE)
		nd(p, n)->flags = NF_SIMPLE;
	return n;
}

/* [<seq-id>] _ : base-36 index plus one, 0 without digits. */
static bool seq_id(struct parser *p, uint32_t *v)
{
	uint32_t x = 0;
	bool any = false;
	while (is_digit(peek(p)) || is_upper(peek(p))) {
		char c = peek(p);
		uint32_t d = is_digit(c) ? (uint32_t)(c - '0') : (uint32_t)(c - 'A' + 10);
		if (x > 10000000u)
			return false;
		x = x * 36u + d;
		any = true;
		p->pos++;
	}
	if (peek(p) != '_')
		return false;
	p->pos++;
	*v = any ? x + 1 : 0;
	return true;
}

/* Optional discriminator after a local name: _ <digit> | __ <number> _ */
static void discriminator(struct parser *p)
{
	if (peek(p) != '_')
		return;
	if (is_digit(peek_at(p, 1))) {
		p->pos += 2;
		return;
	}
	if (peek_at(p, 1) == '_') {
		uint32_t save = p->pos, v;
		bool neg;
		p->pos += 2;
		if (number(p, &v, &neg) && peek(p) == '_')
			p->pos++;
		else
			p->pos = save;
	}
}

struct std_sub {
	char code;
	const char *text, *ctor;
};
static const struct std_sub std_subs[] = {
	{'a', "std::allocator", "allocator"},
	{'b', "std::basic_string", "basic_string"},
	{'s', "std::basic_string<char, std::char_traits<char>, std::allocator<char> >", "basic_string"},
	{'i', "std::basic_istream<char, std::char_traits<char> >", "basic_istream"},
	{'o', "std::basic_ostream<char, std::char_traits<char> >", "basic_ostream"},
	{'d', "std::basic_iostream<char, std::char_traits<char> >", "basic_iostream"},
};

/* <substitution> at 'S' (not "St"). */
static uint32_t substitution(struct parser *p)
{
	p->pos++;
	char c = peek(p);
	for (uint32_t i = 0; i < sizeof(std_subs) / sizeof(std_subs[0]); i++) {
		if (std_subs[i].code == c) {
			p->pos++;
			uint32_t n = mk_cstr(p, std_subs[i].text);
			uint32_t ctor = mk_cstr(p, std_subs[i].ctor);
			if (n != NONE)
				nd(p, n)->c = ctor;
			return n;
		}
	}
	uint32_t id;
	if (!seq_id(p, &id) || id >= p->nsubs) {
		p->fail = true;
		return NONE;
	}
	uint32_t n = p->w->subs[id];
	const struct demangle_node *d = nd(p, n);
	bool keep = p->sub_keep;
	p->sub_keep = false;
	if (d->kind == N_TPARAM) {
		/* c++filt resolves a template parameter where it is used: in
		 * the signature of a function whose template args hold a local
		 * name, S_ to T_ there is the function's own T_; but under a
		 * reference it keeps the scope it was first printed in (taken
		 * here as where it was read). */
		const struct demangle_node *l = p->tparams != NONE ? nd(p, p->tparams) : 0;
		if (keep && d->a != NONE && (nd(p, d->a)->flags & NF_LAMBDA_PARM))
			keep = false; /* printed as auto:N: no scope was kept */
		if (!keep && p->in_lambda == 0 && l && d->c < l->b)
			return p->w->lists[l->a + d->c];
		return d->a;
	}
	if (d->kind == N_PACK && d->a != NONE && (nd(p, d->a)->flags & NF_LAMBDA_PARM) && p->in_lambda == 0)
		d = nd(p, d->a); /* (auto:1)...: the pack itself */
	if ((d->flags & NF_LAMBDA_PARM) && p->in_lambda == 0) {
		const struct demangle_node *l = p->tparams != NONE ? nd(p, p->tparams) : 0;
		if (!l || d->c >= l->b) {
			p->fail = true;
			return NONE;
		}
		n = p->w->lists[l->a + d->c];
	}
	return n;
}

static uint32_t mk_number_text(struct parser *p, const char *pre, uint32_t v, const char *post)
{
	char digits[12];
	uint32_t n = 0;
	char rev[12];
	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < sizeof(rev));
	for (uint32_t i = 0; i < n; i++)
		digits[i] = rev[n - 1 - i];
	return mk_text3(p, pre, str_len(pre), digits, n, post, str_len(post));
}

/* <template-param> ::= T_ | T <number> _  (at 'T') */
static uint32_t template_param(struct parser *p)
{
	p->pos++;
	uint32_t idx = 0;
	bool neg;
	if (is_digit(peek(p))) {
		if (!number(p, &idx, &neg))
			return NONE;
		idx++;
	}
	p->last_tparam = idx;
	if (peek(p) == '_' && p->in_lambda > 0) { /* a generic lambda's parameter */
		p->pos++;
		uint32_t n = mk_number_text(p, "auto:", idx + 1, "");
		if (n != NONE) {
			nd(p, n)->flags = NF_LAMBDA_PARM;
			nd(p, n)->c = idx;
		}
		return n;
	}
	if (peek(p) != '_' || p->tparams == NONE) {
		p->fail = true;
		return NONE;
	}
	p->pos++;
	struct demangle_node *l = nd(p, p->tparams);
	if (idx >= l->b) {
		p->fail = true;
		return NONE;
	}
	return p->w->lists[l->a + idx];
}

/* The name a constructor of `n` takes: its last unqualified component. */
static uint32_t base_name(struct parser *p, uint32_t n)
{
	for (uint32_t i = 0; i < 64 && n != NONE; i++) {
		struct demangle_node *d = nd(p, n);
		if (d->kind == N_TEMPLATE || d->kind == N_ABI)
			n = d->a;
		else if (d->kind == N_NESTED && nd(p, d->b)->kind == N_STR && nd(p, d->b)->len > 0 &&
			 nd(p, d->b)->s[0] == '{')
			n = d->a; /* an unnamed type's constructor: its scope's name */
		else if (d->kind == N_NESTED)
			n = d->b;
		else if (d->kind == N_STR && d->c != NONE)
			return d->c;
		else
			return n;
	}
	return n;
}

struct code_name {
	char code[3];
	const char *name;
};
static const struct code_name operators[] = {
	{"nw", "operator new"},	    {"na", "operator new[]"}, {"dl", "operator delete"},
	{"da", "operator delete[]"}, {"ps", "operator+"},     {"ng", "operator-"},
	{"ad", "operator&"},	    {"de", "operator*"},      {"co", "operator~"},
	{"pl", "operator+"},	    {"mi", "operator-"},      {"ml", "operator*"},
	{"dv", "operator/"},	    {"rm", "operator%"},      {"an", "operator&"},
	{"or", "operator|"},	    {"eo", "operator^"},      {"aS", "operator="},
	{"pL", "operator+="},	    {"mI", "operator-="},     {"mL", "operator*="},
	{"dV", "operator/="},	    {"rM", "operator%="},     {"aN", "operator&="},
	{"oR", "operator|="},	    {"eO", "operator^="},     {"ls", "operator<<"},
	{"rs", "operator>>"},	    {"lS", "operator<<="},    {"rS", "operator>>="},
	{"eq", "operator=="},	    {"ne", "operator!="},     {"lt", "operator<"},
	{"gt", "operator>"},	    {"le", "operator<="},     {"ge", "operator>="},
	{"ss", "operator<=>"},	    {"nt", "operator!"},      {"aa", "operator&&"},
	{"oo", "operator||"},	    {"pp", "operator++"},     {"mm", "operator--"},
	{"cm", "operator,"},	    {"pm", "operator->*"},    {"pt", "operator->"},
	{"cl", "operator()"},	    {"ix", "operator[]"},     {"qu", "operator?"},
	{"aw", "operator co_await"},
};

static const struct code_name builtins[] = {
	{"v", "void"},		{"w", "wchar_t"},	   {"b", "bool"},
	{"c", "char"},		{"a", "signed char"},	   {"h", "unsigned char"},
	{"s", "short"},		{"t", "unsigned short"},   {"i", "int"},
	{"j", "unsigned int"},	{"l", "long"},		   {"m", "unsigned long"},
	{"x", "long long"},	{"y", "unsigned long long"}, {"n", "__int128"},
	{"o", "unsigned __int128"}, {"f", "float"},	   {"d", "double"},
	{"e", "long double"},	{"g", "__float128"},	   {"z", "..."},
	{"Dn", "decltype(nullptr)"}, {"Da", "auto"},	   {"Dc", "decltype(auto)"},
	{"Di", "char32_t"},	{"Ds", "char16_t"},	   {"Du", "char8_t"},
	{"Df", "decimal32"},	{"Dd", "decimal64"},	   {"De", "decimal128"},
	{"Dh", "half"},
};
#define BUILTIN_COUNT (sizeof(builtins) / sizeof(builtins[0]))
#define BUILTIN_FIRST_D 21u

/* builtins[] index + 1 of each one-letter code 'a'..'z', 0 for none. */
static const uint8_t builtin_letter[26] = {
	['a' - 'a'] = 5,  ['b' - 'a'] = 3,  ['c' - 'a'] = 4,  ['d' - 'a'] = 18, ['e' - 'a'] = 19,
	['f' - 'a'] = 17, ['g' - 'a'] = 20, ['h' - 'a'] = 6,  ['i' - 'a'] = 9,  ['j' - 'a'] = 10,
	['l' - 'a'] = 11, ['m' - 'a'] = 12, ['n' - 'a'] = 15, ['o' - 'a'] = 16, ['s' - 'a'] = 7,
	['t' - 'a'] = 8,  ['v' - 'a'] = 1,  ['w' - 'a'] = 2,  ['x' - 'a'] = 13, ['y' - 'a'] = 14,
	['z' - 'a'] = 21,
};

/* The length of each builtins[] name. */
static const uint8_t builtin_len[] = {
	4, 7, 4, 4, 11, 13, 5, 14, 3, 12, 4, 13, 9, 18, 8, 17, 5, 6, 11, 10, 3,
	17, 4, 14, 8, 8, 7, 9, 9, 10, 4,
};
_Static_assert(sizeof(builtin_len) == BUILTIN_COUNT, "one length per builtin");

/* A builtin type at pos (1 or 2 letters), or NONE without consuming. */
__attribute__((always_inline)) static inline uint32_t builtin_type(struct parser *p)
{
	char c0 = peek(p), c1 = peek_at(p, 1);
	uint32_t i = NONE;
	if (is_lower(c0)) {
		/* One-letter codes: a direct index (0 = none). */
		uint8_t k = builtin_letter[c0 - 'a'];
		if (k != 0)
			i = k - 1u;
	} else if (c0 == 'D') {
		/* Two-letter codes all start with 'D': the last ten entries. */
		for (uint32_t j = BUILTIN_FIRST_D; j < BUILTIN_COUNT; j++) {
			if (builtins[j].code[1] == c1) {
				i = j;
				break;
			}
		}
	}
	if (i == NONE)
		return NONE;
	p->pos += builtins[i].code[1] ? 2u : 1u;
	uint32_t n = mk_str(p, builtins[i].name, builtin_len[i]);
	if (n != NONE)
		nd(p, n)->flags = 1; /* builtin */
	return n;
}

/* The value of an <expr-primary> of type `type`: [n] <chars> E.  c0 c1:
 * the builtin type's code ("i", "Dn"...), or 0 0 for another type. */
static uint32_t literal_value(struct parser *p, uint32_t type, char c0, char c1)
{
	char code = c0 == 'D' ? 0 : c0;
	if (c0 == 'D' && c1 == 'n' && peek(p) == 'E') { /* LDnE: nullptr, printed as its type */
		p->pos++;
		return type;
	}
	bool neg = peek(p) == 'n';
	if (neg)
		p->pos++;
	uint32_t start = p->pos;
	while (peek(p) != 'E' && peek(p) != 0)
		p->pos++;
	if (peek(p) != 'E') {
		p->fail = true;
		return NONE;
	}
	const char *v = p->s + start;
	uint32_t len = p->pos - start;
	p->pos++;
	const char *suffix = 0;
	switch (code) {
	case 'i': suffix = ""; break;
	case 'j': suffix = "u"; break;
	case 'l': suffix = "l"; break;
	case 'm': suffix = "ul"; break;
	case 'x': suffix = "ll"; break;
	case 'y': suffix = "ull"; break;
	case 'b':
		if (len == 1 && !neg && (v[0] == '0' || v[0] == '1'))
			return mk_cstr(p, v[0] == '1' ? "true" : "false");
		break;
	default: break;
	}
	if (suffix)
		return mk_text3(p, neg ? "-" : "", neg ? 1u : 0u, v, len, suffix, str_len(suffix));
	bool fl = code == 'd' || code == 'e' || code == 'f' || code == 'g' || (c0 == 'D' && c1 == 'h');
	uint32_t start_text = p->ntext;
	if ((neg && !text_put(p, "-", 1)) || (fl && !text_put(p, "[", 1)) || !text_put(p, v, len) ||
	    (fl && !text_put(p, "]", 1)))
		return NONE;
	uint32_t r = mk2(p, N_CAST, type, NONE);
	if (r != NONE) {
		nd(p, r)->s = p->w->text + start_text;
		nd(p, r)->len = p->ntext - start_text;
	}
	return r;
}

/* ---- the rules ---- */

static bool at_encoding_end(const struct parser *p)
{
	char c = peek(p);
	return c == 0 || c == 'E' || c == '.';
}

static const char *const special_prefix[] = {
	"vtable for ",		 "VTT for ",		     "typeinfo for ",
	"typeinfo name for ",	 "non-virtual thunk to ",    "virtual thunk to ",
	"covariant return thunk to ", "TLS init function for ", "TLS wrapper function for ",
	"guard variable for ",	 "transaction clone for ",   "reference temporary #0 for ",
};

/* h <number> _ | v <number> _ <number> _ */
static bool call_offset(struct parser *p)
{
	uint32_t v;
	bool neg;
	char c = peek(p);
	p->pos++;
	if (c != 'h' && c != 'v')
		return false;
	if (!number(p, &v, &neg) || peek(p) != '_')
		return false;
	p->pos++;
	if (c == 'v') {
		if (!number(p, &v, &neg) || peek(p) != '_')
			return false;
		p->pos++;
	}
	return true;
}

enum { ENC_NAME = 1, ENC_RET, ENC_PARAMS, ENC_SPECIAL, ENC_CTOR_VT1, ENC_CTOR_VT2 };

static void step_encoding(struct parser *p, uint32_t *f)
{
	char c0 = peek(p), c1 = peek_at(p, 1);
	switch (f[1]) {
	case 0:
		if (c0 == 'T' || (c0 == 'G' && (c1 == 'V' || c1 == 'R' || c1 == 'T'))) {
			uint32_t rule = R_NAME, prefix;
			p->pos += 2;
			if (c0 == 'T' && (c1 == 'V' || c1 == 'T' || c1 == 'I' || c1 == 'S')) {
				prefix = c1 == 'V' ? 0 : c1 == 'T' ? 1 : c1 == 'I' ? 2 : 3;
				rule = R_TYPE;
			} else if (c0 == 'T' && c1 == 'h') {
				p->pos--;
				prefix = 4;
				rule = R_ENCODING;
				if (!call_offset(p))
					p->fail = true;
			} else if (c0 == 'T' && c1 == 'v') {
				p->pos--;
				prefix = 5;
				rule = R_ENCODING;
				if (!call_offset(p))
					p->fail = true;
			} else if (c0 == 'T' && c1 == 'c') {
				prefix = 6;
				rule = R_ENCODING;
				/* two offsets: this, then the result */
				bool first = call_offset(p);
				if (!first || !call_offset(p))
					p->fail = true;
			} else if (c0 == 'T' && (c1 == 'H' || c1 == 'W')) {
				prefix = c1 == 'H' ? 7 : 8;
			} else if (c0 == 'T' && c1 == 'C') {
				f[1] = ENC_CTOR_VT1;
				call(p, R_TYPE);
				return;
			} else if (c0 == 'G' && c1 == 'V') {
				prefix = 9;
			} else if (c0 == 'G' && c1 == 'T' && (peek(p) == 't' || peek(p) == 'n')) {
				p->pos++;
				prefix = 10;
				rule = R_ENCODING;
			} else if (c0 == 'G' && c1 == 'R') {
				prefix = 11;
			} else {
				p->fail = true;
				return;
			}
			f[1] = ENC_SPECIAL;
			f[3] = prefix;
			f[4] = c0 == 'G' && c1 == 'R';
			call(p, rule);
			return;
		}
		f[1] = ENC_NAME;
		f[5] = p->tp_owner;
		p->tp_owner = p->nframes + 1;
		call(p, R_NAME);
		return;
	case ENC_NAME: {
		p->tp_owner = f[5];
		f[4] = (uint32_t)p->name_quals | (uint32_t)p->name_ref << 8;
		if (at_encoding_end(p)) {
			ret(p, pop_value(p, f[2]));
			return;
		}
		if (p->name_template && !p->name_ctor) {
			f[3] = 1; /* has a return type */
			f[1] = ENC_RET;
			call(p, R_TYPE);
			return;
		}
		/* The parameters start in the same step. */
		f[1] = ENC_PARAMS;
	}
		/* fall through */
	case ENC_RET:
		f[1] = ENC_PARAMS;
		/* fall through */
	case ENC_PARAMS: {
		if (!at_encoding_end(p)) {
			call(p, R_TYPE);
			return;
		}
		uint32_t first = f[2] + 1 + f[3];
		if (first > p->nvalues) {
			p->fail = true;
			return;
		}
		uint32_t params = mk_list(p, first);
		drop_lone_void(p, params);
		uint32_t rtype = f[3] ? pop_value(p, f[2]) : NONE;
		uint32_t name = pop_value(p, f[2]);
		uint32_t e = mk2(p, N_ENC, rtype, name);
		if (e != NONE) {
			nd(p, e)->c = params;
			nd(p, e)->quals = (uint8_t)(f[4] & 0xff);
			nd(p, e)->flags = (uint16_t)(f[4] >> 8);
		}
		ret(p, e);
		return;
	}
	case ENC_SPECIAL: {
		uint32_t child = pop_value(p, f[2]);
		if (f[4]) { /* GR: [seq-id] _ after the name */
			uint32_t id;
			if (peek(p) != 0 && peek(p) != '.' && !seq_id(p, &id)) {
				p->fail = true;
				return;
			}
		}
		const char *pre = special_prefix[f[3]];
		ret(p, mk_s(p, N_PREFIX, child, pre, str_len(pre)));
		return;
	}
	case ENC_CTOR_VT1: {
		uint32_t v;
		bool neg;
		if (!number(p, &v, &neg) || peek(p) != '_') {
			p->fail = true;
			return;
		}
		p->pos++;
		f[1] = ENC_CTOR_VT2;
		call(p, R_TYPE);
		return;
	}
	case ENC_CTOR_VT2: {
		uint32_t in = pop_value(p, f[2]);
		uint32_t of = pop_value(p, f[2]);
		uint32_t x = mk2(p, N_INFIX, in, of);
		if (x != NONE) {
			nd(p, x)->s = "-in-";
			nd(p, x)->len = 4;
		}
		ret(p, mk_s(p, N_PREFIX, x, "construction vtable for ", 24));
		return;
	}
	default:
		p->fail = true;
	}
}

__attribute__((always_inline)) static inline void step_name(struct parser *p, uint32_t *f)
{
	switch (f[1]) {
	case 0: {
		char c = peek(p);
		p->name_quals = p->name_ref = 0;
		p->name_template = p->name_ctor = false;
		if (c == 'N') {
			f[1] = 9;
			call(p, R_NESTED);
		} else if (c == 'Z') {
			f[1] = 9;
			call(p, R_LOCAL);
		} else if (c == 'S' && peek_at(p, 1) != 't') {
			uint32_t s = substitution(p);
			if (peek(p) != 'I') {
				p->fail = true;
				return;
			}
			push_value(p, s);
			f[1] = 5;
			call(p, R_TARGS);
		} else {
			if (c == 'S') {
				p->pos += 2;
				f[3] = 1;
			}
			f[1] = 2;
			call(p, R_UNQUAL);
		}
		return;
	}
	case 2: {
		uint32_t u = pop_value(p, f[2]);
		if (f[3])
			u = mk2(p, N_NESTED, mk_cstr(p, "std"), u);
		p->name_template = p->name_ctor = false;
		if (peek(p) == 'I') {
			add_sub(p, u);
			push_value(p, u);
			f[1] = 5;
			call(p, R_TARGS);
			return;
		}
		ret(p, u);
		return;
	}
	case 5: {
		uint32_t args = pop_value(p, f[2]);
		uint32_t name = pop_value(p, f[2]);
		p->name_template = true;
		p->name_ctor = false;
		ret(p, mk2(p, N_TEMPLATE, name, args));
		return;
	}
	default:
		ret(p, pop_value(p, f[2]));
	}
}

/* The next component of a nested name, or its end (the state f[1] = 1). */
static void nested_next(struct parser *p, uint32_t *f)
{
	char c = peek(p), c1 = peek_at(p, 1);
	uint32_t sofar = f[3];
	if (c == 'E') {
		p->pos++;
		if (sofar == NONE) {
			p->fail = true;
			return;
		}
		if ((f[4] & 1) && p->nsubs > 0)
			p->nsubs--;
		p->name_quals = (uint8_t)(f[4] >> 8);
		p->name_ref = (uint8_t)(f[4] >> 16);
		p->name_ctor = (f[5] & 1) != 0;
		p->name_template = (f[5] & 2) != 0;
		ret(p, sofar);
		return;
	}
	if (c == 'M') {
		p->pos++;
		return;
	}
	if (c == 'S' && c1 != 't') {
		if (sofar != NONE) {
			p->fail = true;
			return;
		}
		f[3] = substitution(p);
		f[4] &= ~1u;
		f[5] = 0;
		return;
	}
	if (c == 'T') {
		uint32_t t = template_param(p);
		f[3] = sofar == NONE ? t : mk2(p, N_NESTED, sofar, t);
		if (sofar == NONE && t != NONE)
			add_tparam_sub(p, t);
		else
			add_sub(p, f[3]);
		f[4] |= 1;
		f[5] = 0;
		return;
	}
	if (c == 'I') {
		if (sofar == NONE) {
			p->fail = true;
			return;
		}
		push_value(p, sofar);
		f[1] = 2;
		call(p, R_TARGS);
		return;
	}
	if (c == 'C' && c1 == 'I' && is_digit(peek_at(p, 2))) {
		/* CI1 <base class>: an inheriting constructor, named after the
		 * base class's last name (c++filt's "last name" read). */
		if (sofar == NONE) {
			p->fail = true;
			return;
		}
		p->pos += 3;
		push_value(p, sofar);
		f[1] = 4;
		call(p, R_TYPE);
		return;
	}
	if ((c == 'C' && is_digit(c1)) || (c == 'D' && is_digit(c1))) {
		if (sofar == NONE) {
			p->fail = true;
			return;
		}
		p->pos += 2;
		uint32_t base = base_name(p, sofar);
		uint32_t n = c == 'C' ? base : mk_s(p, N_PREFIX, base, "~", 1);
		f[3] = mk2(p, N_NESTED, sofar, n);
		add_sub(p, f[3]);
		f[4] |= 1;
		f[5] = 1;
		return;
	}
	if (c == 'D' && (c1 == 't' || c1 == 'T')) { /* a decltype prefix */
		if (sofar != NONE) {
			p->fail = true;
			return;
		}
		push_value(p, sofar);
		f[1] = 3;
		call(p, R_TYPE);
		return;
	}
	push_value(p, sofar);
	f[1] = 3;
	call(p, R_UNQUAL);
	return;
}

/* f[3]: the name so far (NONE at first), f[4]: last component was added as
 * a substitution, f[5]: 1 = last was ctor/dtor/conversion, 2 = template args. */
__attribute__((always_inline)) static inline void step_nested(struct parser *p, uint32_t *f)
{
	switch (f[1]) {
	case 0:
		p->pos++;
		f[3] = NONE;
		/* cv and ref qualifiers of a member function, kept in f[4]'s
		 * high bits (names parsed inside would overwrite p's). */
		for (uint32_t i = 0; i < 3; i++) {
			char c = peek(p);
			if (c == 'r' || c == 'V' || c == 'K') {
				f[4] |= (c == 'r' ? Q_RESTRICT : c == 'V' ? Q_VOLATILE : Q_CONST) << 8;
				p->pos++;
			}
		}
		if (peek(p) == 'R' || peek(p) == 'O') {
			f[4] |= (peek(p) == 'R' ? 1u : 2u) << 16;
			p->pos++;
		}
		if (peek(p) == 'S' && peek_at(p, 1) == 't') {
			p->pos += 2;
			f[3] = mk_cstr(p, "std");
		}
		f[1] = 1;
		if (!p->fail)
			nested_next(p, f);
		return;
	case 1:
		nested_next(p, f);
		return;
	case 2: {
		uint32_t args = pop_value(p, f[2]);
		uint32_t base = pop_value(p, f[2]);
		f[3] = mk2(p, N_TEMPLATE, base, args);
		add_sub(p, f[3]);
		f[4] |= 1;
		f[5] = (f[5] & 1) | 2; /* a constructor template stays a constructor */
		f[1] = 1;
		if (!p->fail)
			nested_next(p, f);
		return;
	}
	case 4: { /* the base class of an inheriting constructor */
		uint32_t base = pop_value(p, f[2]);
		uint32_t sofar = pop_value(p, f[2]);
		f[3] = mk2(p, N_NESTED, sofar, base_name(p, base));
		add_sub(p, f[3]);
		f[4] |= 1;
		f[5] = 1;
		f[1] = 1;
		if (!p->fail)
			nested_next(p, f);
		return;
	}
	case 3: {
		uint32_t u = pop_value(p, f[2]);
		uint32_t sofar = pop_value(p, f[2]);
		struct demangle_node *un = u != NONE ? nd(p, u) : 0;
		bool conv = un && un->kind == N_PREFIX && un->len == 9 && bytes_eq(un->s, "operator ", 9);
		f[3] = sofar == NONE ? u : mk2(p, N_NESTED, sofar, u);
		add_sub(p, f[3]);
		f[4] |= 1;
		f[5] = conv ? 1 : 0;
		f[1] = 1;
		if (!p->fail)
			nested_next(p, f);
		return;
	}
	default:
		p->fail = true;
	}
}

/* The number of a lambda or unnamed type: [<number>] _ , printed +2 or 1. */
static bool closure_number(struct parser *p, uint32_t *out)
{
	uint32_t v = 0;
	bool neg, any = is_digit(peek(p));
	if (any && !number(p, &v, &neg))
		return false;
	if (peek(p) != '_')
		return false;
	p->pos++;
	*out = any ? v + 2 : 1;
	return true;
}

/* f[3]: the template args in force before, restored at the end unless this
 * local name is the encoding's own name (f[4]). */
static void step_local(struct parser *p, uint32_t *f)
{
	switch (f[1]) {
	case 0:
		p->pos++;
		f[3] = p->tparams;
		f[4] = p->nframes >= 1 && p->nframes - 1 == p->tp_owner + 1;
		f[1] = 1;
		call(p, R_ENCODING);
		return;
	case 1:
		if (peek(p) != 'E') {
			p->fail = true;
			return;
		}
		p->pos++;
		{
			/* The enclosing function prints without its return type. */
			uint32_t enc = p->nvalues > f[2] ? p->w->values[p->nvalues - 1] : NONE;
			if (enc != NONE && nd(p, enc)->kind == N_ENC)
				nd(p, enc)->a = NONE;
		}
		if (peek(p) == 's') {
			p->pos++;
			discriminator(p);
			if (!f[4])
				p->tparams = f[3];
			uint32_t enc = pop_value(p, f[2]);
			p->name_template = p->name_ctor = false;
			ret(p, mk2(p, N_NESTED, enc, mk_cstr(p, "string literal")));
			return;
		}
		if (peek(p) == 'd') { /* d [<number>] _ : in a default argument */
			p->pos++;
			uint32_t v;
			if (!closure_number(p, &v) || p->nvalues <= f[2]) {
				p->fail = true;
				return;
			}
			uint32_t *top = &p->w->values[p->nvalues - 1];
			*top = mk2(p, N_NESTED, *top, mk_number_text(p, "{default arg#", v, "}"));
		}
		f[1] = 2;
		if (p->nframes - 1 == p->tp_owner) {
			/* The encoding's own name: the entity's template args
			 * are what T_ in the signature refers to. */
			p->tparams = f[3];
			p->tp_owner = p->nframes + 1;
			f[5] = 1;
		}
		call(p, R_NAME);
		return;
	default: {
		uint32_t name = pop_value(p, f[2]);
		uint32_t enc = pop_value(p, f[2]);
		discriminator(p);
		if (!f[4] && !f[5])
			p->tparams = f[3];
		ret(p, mk2(p, N_NESTED, enc, name));
	}
	}
}

/* The unqualified name's ABI tags, then its end (the state f[1] = 8). */
static void unqual_finish(struct parser *p, uint32_t *f)
{
	uint32_t name = pop_value(p, f[2]);
	for (uint32_t i = 0; i < 16 && peek(p) == 'B' && !p->fail; i++) {
		p->pos++;
		uint32_t tag = source_name(p);
		if (tag != NONE)
			name = mk_s(p, N_ABI, name, nd(p, tag)->s, nd(p, tag)->len);
	}
	ret(p, name);
}

__attribute__((always_inline)) static inline void step_unqual(struct parser *p, uint32_t *f)
{
	switch (f[1]) {
	case 0: {
		char c = peek(p), c1 = peek_at(p, 1);
		if (c == 'L') {
			p->pos++;
			return;
		}
		if (is_digit(c)) {
			push_value(p, source_name(p));
			f[1] = 8;
			if (!p->fail)
				unqual_finish(p, f);
			return;
		}
		if (c == 'U' && c1 == 't') {
			p->pos += 2;
			uint32_t v;
			if (!closure_number(p, &v)) {
				p->fail = true;
				return;
			}
			push_value(p, mk_number_text(p, "{unnamed type#", v, "}"));
			f[1] = 8;
			if (!p->fail)
				unqual_finish(p, f);
			return;
		}
		if (c == 'U' && c1 == 'l') {
			p->pos += 2;
			p->in_lambda++;
			f[1] = 2;
			return;
		}
		if (c == 'c' && c1 == 'v') {
			p->pos += 2;
			f[1] = 4;
			call(p, R_TYPE);
			return;
		}
		if (c == 'l' && c1 == 'i') {
			p->pos += 2;
			uint32_t id = source_name(p);
			if (id == NONE)
				return;
			push_value(p, mk_text3(p, "operator\"\" ", 11, nd(p, id)->s, nd(p, id)->len, "", 0));
			f[1] = 8;
			if (!p->fail)
				unqual_finish(p, f);
			return;
		}
		if (c == 'v' && is_digit(c1)) {
			p->pos += 2;
			uint32_t id = source_name(p);
			push_value(p, id == NONE ? NONE : mk_s(p, N_PREFIX, id, "operator ", 9));
			f[1] = 8;
			if (!p->fail)
				unqual_finish(p, f);
			return;
		}
		if (is_lower(c)) {
			for (uint32_t i = 0; i < sizeof(operators) / sizeof(operators[0]); i++) {
				if (operators[i].code[0] == c && operators[i].code[1] == c1) {
					p->pos += 2;
					push_value(p, mk_cstr(p, operators[i].name));
					f[1] = 8;
					if (!p->fail)
						unqual_finish(p, f);
					return;
				}
			}
		}
		p->fail = true;
		return;
	}
	case 2: /* lambda parameters */
		if (peek(p) != 'E') {
			call(p, R_TYPE);
			return;
		} else {
			p->pos++;
			p->in_lambda--;
			uint32_t params = mk_list(p, f[2]);
			drop_lone_void(p, params);
			uint32_t v;
			if (!closure_number(p, &v)) {
				p->fail = true;
				return;
			}
			uint32_t num = mk_number_text(p, "", v, "");
			uint32_t l = num == NONE ? NONE : mk2(p, N_LAMBDA, NONE, params);
			if (l != NONE) {
				nd(p, l)->s = nd(p, num)->s;
				nd(p, l)->len = nd(p, num)->len;
			}
			push_value(p, l);
			f[1] = 8;
			if (!p->fail)
				unqual_finish(p, f);
			return;
		}
	case 4: {
		uint32_t t = pop_value(p, f[2]);
		push_value(p, mk_s(p, N_PREFIX, t, "operator ", 9));
		f[1] = 8;
		if (!p->fail)
			unqual_finish(p, f);
		return;
	}
	default:
		unqual_finish(p, f);
	}
}

/* The children of a node that are nodes, for find_pack. */
static uint32_t node_children(const struct demangle_node *d, uint32_t out[3])
{
	switch (d->kind) {
	case N_STR:
	case N_EXPAND:
	case N_PACK:
	case N_LIST:
		return 0;
	case N_ENC: /* c++filt's order: name, return type, parameters */
		out[0] = d->b, out[1] = d->a, out[2] = d->c;
		return 3;
	case N_TERNARY:
	case N_NEW:
	case N_DESIG:
		out[0] = d->a, out[1] = d->b, out[2] = d->c;
		return 3;
	case N_VECTOR: /* c++filt's order: dimension, element */
		out[0] = d->c, out[1] = d->a;
		return 2;
	default:
		out[0] = d->a, out[1] = d->b;
		return 2;
	}
}

/* Whether a pack is the value of one of the template parameters in force
 * (what a T_ that c++filt resolves when printing would find). */
static bool is_param_pack(struct parser *p, uint32_t pack)
{
	if (p->tparams == NONE)
		return false;
	const struct demangle_node *l = nd(p, p->tparams);
	for (uint32_t i = 0; i < l->b; i++)
		if (p->w->lists[l->a + i] == pack)
			return true;
	return false;
}

/* The first template parameter pack a pattern refers to (an expanded list),
 * searched left to right, not into nested expansions; NONE if none. */
static uint32_t find_pack(struct parser *p, uint32_t n)
{
	uint32_t stack[64], top = 0, budget = 4u * DEMANGLE_MAX_NODES;
	if (n != NONE)
		stack[top++] = n;
	while (top > 0 && budget-- > 0) {
		uint32_t i = stack[--top];
		const struct demangle_node *d = nd(p, i);
		if (d->kind == N_LIST && d->flags == 1 && is_param_pack(p, i))
			return i;
		if (d->kind == N_LIST) {
			for (uint32_t j = d->b; j > 0 && top < 64; j--)
				stack[top++] = p->w->lists[d->a + j - 1];
			continue;
		}
		uint32_t kids[3];
		uint32_t k = node_children(d, kids);
		for (uint32_t j = k; j > 0 && top < 64; j--)
			if (kids[j - 1] != NONE)
				stack[top++] = kids[j - 1];
	}
	return NONE;
}

static uint32_t mk3(struct parser *p, uint8_t kind, uint32_t a, uint32_t b, uint32_t c, const char *s, uint16_t flags)
{
	uint32_t i = node_new(p, kind);
	if (i != NONE) {
		struct demangle_node *d = nd(p, i);
		d->a = a;
		d->b = b;
		d->c = c;
		d->s = s ? s : "";
		d->len = s ? str_len(s) : 0;
		d->flags = flags;
	}
	return i;
}

/* `t` with cv-qualifiers: on an array type they qualify its elements,
 * char const [3][4].  On a qualified type (a template argument, an array
 * of const elements): each qualifier once, the inner ones first, as
 * c++filt. */
static uint32_t qualify(struct parser *p, uint32_t t, uint8_t quals)
{
	uint32_t dims[32], k = 0, elem = t;
	while (elem != NONE && k < 32 && nd(p, elem)->kind == N_ARRAY) {
		dims[k++] = elem;
		elem = nd(p, elem)->a;
	}
	if (elem != NONE && nd(p, elem)->kind == N_QUAL && (nd(p, elem)->quals & quals)) {
		uint8_t rest = (uint8_t)(nd(p, elem)->quals & ~quals);
		uint32_t inner = nd(p, elem)->a;
		if (rest) {
			inner = mk2(p, N_QUAL, inner, NONE);
			if (inner != NONE)
				nd(p, inner)->quals = rest;
		}
		elem = inner;
	}
	uint32_t q = mk2(p, N_QUAL, elem, NONE);
	if (q != NONE)
		nd(p, q)->quals = quals;
	for (uint32_t i = k; i > 0 && q != NONE; i--) {
		const struct demangle_node *d = nd(p, dims[i - 1]);
		uint32_t c = d->c;
		q = mk_s(p, N_ARRAY, q, d->s, d->len);
		if (q != NONE)
			nd(p, q)->c = c;
	}
	return q;
}

/* Dp <type>: when the type is a known pack (a template parameter bound to
 * J...E) under pointers, references and qualifiers, one type per element,
 * references collapsing (T& && is T&); otherwise "type...". */
static uint32_t expand_pack(struct parser *p, uint32_t t)
{
	uint32_t chain[8], depth = 0, base = t;
	while (base != NONE && depth < 8 && (nd(p, base)->kind == N_PTR || nd(p, base)->kind == N_QUAL)) {
		chain[depth++] = base;
		base = nd(p, base)->a;
	}
	if (base == NONE || nd(p, base)->kind != N_LIST || nd(p, base)->flags != 1) {
		/* A pack deeper in the pattern: expanded when printed. */
		uint32_t pack = find_pack(p, t);
		if (pack != NONE)
			return mk3(p, N_EXPAND, t, NONE, pack, 0, 0);
		return mk2(p, N_PACK, t, NONE);
	}
	if (depth == 0)
		return base;
	uint32_t count = nd(p, base)->b, first = nd(p, base)->a;
	uint32_t from = p->nvalues;
	for (uint32_t i = 0; i < count && !p->fail; i++) {
		uint32_t cur = p->w->lists[first + i];
		for (uint32_t k = depth; k > 0 && !p->fail; k--) {
			const struct demangle_node *c = nd(p, chain[k - 1]);
			bool is_ref = c->kind == N_PTR && c->s[0] == '&';
			const struct demangle_node *cn = nd(p, cur);
			if (is_ref && cn->kind == N_PTR && cn->s[0] == '&') {
				/* collapse: && only when both are && */
				if (c->len == 1 && cn->len == 2)
					cur = mk_s(p, N_PTR, cn->a, "&", 1);
				continue;
			}
			uint32_t n;
			if (c->kind == N_QUAL) {
				n = qualify(p, cur, c->quals);
			} else {
				n = mk2(p, c->kind, cur, NONE);
				if (n != NONE) {
					nd(p, n)->s = c->s;
					nd(p, n)->len = c->len;
				}
			}
			cur = n;
		}
		push_value(p, cur);
	}
	uint32_t l = mk_list(p, from);
	if (l != NONE)
		nd(p, l)->flags = 1;
	return l;
}

enum {
	T_QUAL = 10, T_PTR, T_FUNC_RET, T_FUNC_PARAMS, T_ARRAY, T_MEM_CLASS, T_MEM_TYPE,
	T_TARGS, T_NAME, T_PACK, T_DECLTYPE, T_ARRAY_DIM, T_VECTOR_DIM, T_VECTOR,
	T_VQUAL_ARGS, T_VQUAL
};

/* Dv [n] <digits> _ as c++filt reads it: a value up to INT_MAX either
 * way ("n" alone is 0), printed without leading zeros; NONE if not so. */
static uint32_t vector_dimension(struct parser *p)
{
	bool neg = peek(p) == 'n';
	if (neg)
		p->pos++;
	uint32_t v = 0;
	while (is_digit(peek(p))) {
		uint32_t d = (uint32_t)(peek(p) - '0');
		if (v > (0x7fffffffu - d) / 10u) {
			p->fail = true;
			return NONE;
		}
		v = v * 10u + d;
		p->pos++;
	}
	if (peek(p) != '_') {
		p->fail = true;
		return NONE;
	}
	p->pos++;
	return mk_number_text(p, neg && v ? "-" : "", v, "");
}

__attribute__((always_inline)) static inline void step_type(struct parser *p, uint32_t *f)
{
	switch (f[1]) {
	case 0: {
		char c = peek(p), c1 = peek_at(p, 1);
		bool under_ref = p->ref_operand, under_qual = p->qual_operand;
		p->ref_operand = p->qual_operand = false;
		uint32_t b = builtin_type(p);
		if (b != NONE) {
			ret(p, b);
			return;
		}
		if (p->fail)
			return;
		switch (c) {
		case 'u': {
			p->pos++;
			uint32_t n = source_name(p);
			add_sub(p, n);
			ret(p, n);
			return;
		}
		case 'r':
		case 'V':
		case 'K':
			for (uint32_t i = 0; i < 3; i++) {
				char q = peek(p);
				if (q != 'r' && q != 'V' && q != 'K')
					break;
				f[3] |= q == 'r' ? Q_RESTRICT : q == 'V' ? Q_VOLATILE : Q_CONST;
				p->pos++;
			}
			f[1] = T_QUAL;
			p->qual_operand = true;
			call(p, R_TYPE);
			return;
		case 'P':
		case 'R':
		case 'O':
			p->pos++;
			f[3] = (uint32_t)c;
			f[1] = T_PTR;
			p->ref_operand = c != 'P';
			call(p, R_TYPE);
			return;
		case 'F':
			p->pos++;
			if (peek(p) == 'Y')
				p->pos++;
			f[4] = under_qual; /* K F...E: only the qualified type is a substitution */
			f[1] = T_FUNC_RET;
			call(p, R_TYPE);
			return;
		case 'A': {
			p->pos++;
			if (!is_digit(peek(p)) && peek(p) != '_') { /* A <expression> _ <type> */
				f[1] = T_ARRAY_DIM;
				call(p, R_EXPR);
				return;
			}
			uint32_t start = p->pos;
			while (is_digit(peek(p)))
				p->pos++;
			if (peek(p) != '_') {
				p->fail = true;
				return;
			}
			f[3] = start;
			f[4] = p->pos - start;
			p->pos++;
			f[1] = T_ARRAY;
			call(p, R_TYPE);
			return;
		}
		case 'U': { /* U <source-name> [<template-args>] <type>: AS1, vector_size<16> */
			p->pos++;
			uint32_t n = source_name(p);
			if (n == NONE) {
				p->fail = true;
				return;
			}
			push_value(p, n);
			f[1] = peek(p) == 'I' ? T_VQUAL_ARGS : T_VQUAL;
			call(p, f[1] == T_VQUAL ? R_TYPE : R_TARGS);
			return;
		}
		case 'M':
			p->pos++;
			f[1] = T_MEM_CLASS;
			call(p, R_TYPE);
			return;
		case 'T': {
			uint32_t t = template_param(p);
			if (t == NONE)
				return;
			add_tparam_sub(p, t);
			if (peek(p) == 'I') {
				push_value(p, t);
				f[1] = T_TARGS;
				call(p, R_TARGS);
				return;
			}
			ret(p, t);
			return;
		}
		case 'S':
			if (c1 != 't') {
				p->sub_keep = under_ref;
				uint32_t s = substitution(p);
				if (s != NONE && peek(p) == 'I') {
					push_value(p, s);
					f[1] = T_TARGS;
					call(p, R_TARGS);
					return;
				}
				ret(p, s);
				return;
			}
			f[1] = T_NAME;
			call(p, R_NAME);
			return;
		case 'D':
			if (c1 == 'p') {
				p->pos += 2;
				f[1] = T_PACK;
				call(p, R_TYPE);
				return;
			}
			if (c1 == 't' || c1 == 'T') { /* Dt / DT <expression> E */
				p->pos += 2;
				f[1] = T_DECLTYPE;
				call(p, R_EXPR);
				return;
			}
			if (c1 == 'v') { /* Dv <dimension> _ <type> | Dv _ <expression> _ <type> */
				p->pos += 2;
				if (peek(p) == '_') {
					p->pos++;
					f[1] = T_VECTOR_DIM;
					call(p, R_EXPR);
					return;
				}
				uint32_t dim = vector_dimension(p);
				if (dim == NONE)
					return;
				push_value(p, dim);
				f[1] = T_VECTOR;
				call(p, R_TYPE);
				return;
			}
			if (c1 == 'F') { /* DF <number> _ : _FloatN */
				p->pos += 2;
				uint32_t start = p->pos, v;
				bool neg;
				if (!number(p, &v, &neg) || neg || peek(p) != '_') {
					p->fail = true;
					return;
				}
				uint32_t n = mk_text3(p, "_Float", 6, p->s + start, p->pos - start, "", 0);
				p->pos++;
				ret(p, n);
				return;
			}
			p->fail = true;
			return;
		default:
			if (is_digit(c) || c == 'N' || c == 'Z') {
				f[1] = T_NAME;
				call(p, R_NAME);
				return;
			}
			p->fail = true;
			return;
		}
	}
	case T_QUAL: {
		uint32_t t = pop_value(p, f[2]);
		uint32_t q = qualify(p, t, (uint8_t)f[3]);
		add_sub(p, q);
		ret(p, q);
		return;
	}
	case T_PTR: {
		uint32_t t = pop_value(p, f[2]);
		const char *s = f[3] == 'P' ? "*" : f[3] == 'R' ? "&" : "&&";
		uint32_t n;
		if (f[3] != 'P' && t != NONE && nd(p, t)->kind == N_PTR && nd(p, t)->s[0] == '&')
			/* reference collapsing: && only when both are && */
			n = f[3] == 'R' && nd(p, t)->len == 2 ? mk_s(p, N_PTR, nd(p, t)->a, "&", 1) : t;
		else
			n = mk_s(p, N_PTR, t, s, str_len(s));
		add_sub(p, n);
		ret(p, n);
		return;
	}
	case T_FUNC_RET:
		f[1] = T_FUNC_PARAMS; /* the parameters start in the same step */
		/* fall through */
	case T_FUNC_PARAMS: {
		char c = peek(p);
		uint32_t ref = 0;
		if ((c == 'R' || c == 'O') && peek_at(p, 1) == 'E') {
			ref = c == 'R' ? 1 : 2;
			p->pos++;
			c = 'E';
		}
		if (c != 'E') {
			if (c == 0) {
				p->fail = true;
				return;
			}
			call(p, R_TYPE);
			return;
		}
		p->pos++;
		uint32_t params = mk_list(p, f[2] + 1);
		drop_lone_void(p, params);
		uint32_t rtype = pop_value(p, f[2]);
		uint32_t fn = mk2(p, N_FUNC, rtype, params);
		if (fn != NONE)
			nd(p, fn)->c = ref;
		if (!f[4])
			add_sub(p, fn);
		ret(p, fn);
		return;
	}
	case T_ARRAY_DIM:
		if (peek(p) != '_') {
			p->fail = true;
			return;
		}
		p->pos++;
		f[5] = 1; /* the dimension is on the value stack */
		f[1] = T_ARRAY;
		call(p, R_TYPE);
		return;
	case T_VECTOR_DIM:
		if (peek(p) != '_') {
			p->fail = true;
			return;
		}
		p->pos++;
		f[1] = T_VECTOR;
		call(p, R_TYPE);
		return;
	case T_VECTOR: {
		uint32_t t = pop_value(p, f[2]);
		uint32_t dim = pop_value(p, f[2]);
		uint32_t v = mk2(p, N_VECTOR, t, NONE);
		if (v != NONE)
			nd(p, v)->c = dim;
		add_sub(p, v);
		ret(p, v);
		return;
	}
	case T_VQUAL_ARGS: {
		uint32_t args = pop_value(p, f[2]);
		uint32_t name = pop_value(p, f[2]);
		push_value(p, mk2(p, N_TEMPLATE, name, args));
		f[1] = T_VQUAL;
		call(p, R_TYPE);
		return;
	}
	case T_VQUAL: {
		uint32_t t = pop_value(p, f[2]);
		uint32_t q = mk2(p, N_VQUAL, t, pop_value(p, f[2]));
		add_sub(p, q);
		ret(p, q);
		return;
	}
	case T_ARRAY: {
		uint32_t t = pop_value(p, f[2]);
		uint32_t dim = f[5] ? pop_value(p, f[2]) : NONE;
		uint32_t a = mk_s(p, N_ARRAY, t, p->s + f[3], f[4]);
		if (a != NONE)
			nd(p, a)->c = dim;
		add_sub(p, a);
		ret(p, a);
		return;
	}
	case T_MEM_CLASS:
		f[1] = T_MEM_TYPE;
		call(p, R_TYPE);
		return;
	case T_MEM_TYPE: {
		uint32_t member = pop_value(p, f[2]);
		uint32_t cls = pop_value(p, f[2]);
		uint32_t m = mk2(p, N_MEMPTR, cls, member);
		add_sub(p, m);
		ret(p, m);
		return;
	}
	case T_TARGS: {
		uint32_t args = pop_value(p, f[2]);
		uint32_t base = pop_value(p, f[2]);
		uint32_t t = mk2(p, N_TEMPLATE, base, args);
		add_sub(p, t);
		ret(p, t);
		return;
	}
	case T_DECLTYPE: {
		if (peek(p) != 'E') {
			p->fail = true;
			return;
		}
		p->pos++;
		uint32_t d = mk2(p, N_DECLTYPE, pop_value(p, f[2]), NONE);
		add_sub(p, d);
		ret(p, d);
		return;
	}
	case T_PACK: {
		uint32_t t = pop_value(p, f[2]);
		uint32_t n = expand_pack(p, t);
		add_sub(p, n);
		ret(p, n);
		return;
	}
	default: { /* T_NAME */
		uint32_t n = pop_value(p, f[2]);
		add_sub(p, n);
		ret(p, n);
	}
	}
}

/* Replaces each expanded pack among values[from..] by its elements. */
static void splice_packs(struct parser *p, uint32_t from)
{
	uint32_t n = p->nvalues - from, extra = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct demangle_node *d = nd(p, p->w->values[from + i]);
		if (d->kind == N_LIST && d->flags == 1 && d->b > 0)
			extra += d->b;
	}
	if (extra == 0 && n == 0)
		return;
	/* Stage the result in the list arena, then copy it back. */
	if (n + extra > DEMANGLE_MAX_NODES - p->nlists || from + n + extra > DEMANGLE_MAX_NODES) {
		p->fail = true;
		return;
	}
	uint32_t start = p->nlists, k = start;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = p->w->values[from + i];
		const struct demangle_node *d = nd(p, v);
		if (d->kind == N_LIST && d->flags == 1 && d->b > 0) {
			for (uint32_t j = 0; j < d->b; j++)
				p->w->lists[k++] = p->w->lists[d->a + j];
		} else {
			p->w->lists[k++] = v;
		}
	}
	for (uint32_t i = start; i < k; i++)
		p->w->values[from + i - start] = p->w->lists[i];
	p->nvalues = from + (k - start);
}

/* The next template argument, or the end (the state f[1] = 1). */
static void targs_next(struct parser *p, uint32_t *f)
{
	char c = peek(p);
	if (c == 'E') {
		p->pos++;
		if (f[4]) /* a pack: packs expanded inside it are spliced in */
			splice_packs(p, f[2]);
		uint32_t l = mk_list(p, f[2]);
		if (f[4] && l != NONE)
			nd(p, l)->flags = 1; /* printed inline */
		if (f[3] && !f[4])
			p->tparams = l;
		ret(p, l);
		return;
	}
	if (c == 'L') { /* <expr-primary>: a literal or L_Z <encoding> E */
		char c1 = peek_at(p, 1);
		if (is_lower(c1) && builtin_letter[c1 - 'a'] != 0) { /* the common case, at once */
			p->pos++;
			uint32_t t = builtin_type(p);
			push_value(p, t == NONE ? NONE : literal_value(p, t, c1, 0));
			return;
		}
		call(p, R_EXPR);
		return;
	}
	if (c == 'X') {
		p->pos++;
		f[1] = 3;
		call(p, R_EXPR);
		return;
	}
	if (c == 'J' || c == 'I') { /* an argument pack (I: g++ before 4.7) */
		p->pos++;
		call(p, R_TARGS);
		if (!p->fail) {
			uint32_t *g = p->w->frames[p->nframes - 1];
			g[1] = 1;
			g[4] = 1;
		}
		return;
	}
	if (c == 0) {
		p->fail = true;
		return;
	}
	call(p, R_TYPE);
	return;
}

/* f[3]: these args become tparams; f[4]: an argument pack (J ... E). */
__attribute__((always_inline)) static inline void step_targs(struct parser *p, uint32_t *f)
{
	switch (f[1]) {
	case 0:
		p->pos++;
		/* The template args of the encoding's own name (its NAME or NESTED
		 * frame called us) are what T_ in its signature refers to. */
		f[3] = p->nframes >= 2 && (p->nframes - 1 == p->tp_owner || p->nframes - 1 == p->tp_owner + 1);
		f[1] = 1;
		targs_next(p, f);
		return;
	case 1:
		targs_next(p, f);
		return;
	default:
		if (peek(p) != 'E') {
			p->fail = true;
			return;
		}
		p->pos++;
		f[1] = 1;
		targs_next(p, f);
	}
}

/* ---- expressions ---- */

struct expr_op {
	char code[3];
	uint8_t arity;
	const char *text; /* as c++filt prints the operator in an expression */
};
/* Sorted by code. */
static const struct expr_op expr_ops[] = {
	{"aN", 2, "&="},	  {"aS", 2, "="},	  {"aa", 2, "&&"},	    {"ad", 1, "&"},
	{"an", 2, "&"},		  {"at", 1, "alignof "},  {"aw", 1, "co_await "},   {"az", 1, "alignof "},
	{"cc", 2, "const_cast"},  {"cl", 2, "()"},	  {"cm", 2, ","},	    {"co", 1, "~"},
	{"dV", 2, "/="},	  {"dX", 3, "[...]="},	  {"da", 1, "delete[] "},   {"dc", 2, "dynamic_cast"},
	{"de", 1, "*"},		  {"di", 2, "="},	  {"dl", 1, "delete "},	    {"ds", 2, ".*"},
	{"dt", 2, "."},		  {"dv", 2, "/"},	  {"dx", 2, "]="},	    {"eO", 2, "^="},
	{"eo", 2, "^"},		  {"eq", 2, "=="},	  {"fL", 3, "..."},	    {"fR", 3, "..."},
	{"fl", 2, "..."},	  {"fr", 2, "..."},	  {"ge", 2, ">="},	    {"gs", 1, "::"},
	{"gt", 2, ">"},		  {"ix", 2, "[]"},	  {"lS", 2, "<<="},	    {"le", 2, "<="},
	{"li", 1, "operator\"\" "}, {"ls", 2, "<<"},	  {"lt", 2, "<"},	    {"mI", 2, "-="},
	{"mL", 2, "*="},	  {"mi", 2, "-"},	  {"ml", 2, "*"},	    {"mm", 1, "--"},
	{"na", 3, "new[]"},	  {"ne", 2, "!="},	  {"ng", 1, "-"},	    {"nt", 1, "!"},
	{"nw", 3, "new"},	  {"nx", 1, "noexcept"},  {"oR", 2, "|="},	    {"oo", 2, "||"},
	{"or", 2, "|"},		  {"pL", 2, "+="},	  {"pl", 2, "+"},	    {"pm", 2, "->*"},
	{"pp", 1, "++"},	  {"ps", 1, "+"},	  {"pt", 2, "->"},	    {"qu", 3, "?"},
	{"rM", 2, "%="},	  {"rS", 2, ">>="},	  {"rc", 2, "reinterpret_cast"}, {"rm", 2, "%"},
	{"rs", 2, ">>"},	  {"sP", 1, "sizeof..."}, {"sZ", 1, "sizeof..."},   {"sc", 2, "static_cast"},
	{"ss", 2, "<=>"},	  {"st", 1, "sizeof "},	  {"sz", 1, "sizeof "},	    {"tr", 0, "throw"},
	{"tw", 1, "throw "},
};
#define EXPR_OP_COUNT ((uint32_t)(sizeof(expr_ops) / sizeof(expr_ops[0])))
/* Forms read like operators, past the table's indices. */
#define OP_CAST (EXPR_OP_COUNT + 0u)   /* cv <type> <expression> | cv <type> _ <expression>* E */
#define OP_TYPED (EXPR_OP_COUNT + 1u)  /* tl <type> <expression>* E */
#define OP_BRACED (EXPR_OP_COUNT + 2u) /* il <expression>* E */
#define OP_VENDOR (EXPR_OP_COUNT + 3u) /* u <source-name> <template-arg>* E */

/* The table index of the operator at pos (consumed), or NONE. */
static uint32_t expr_op(struct parser *p)
{
	char c0 = peek(p), c1 = peek_at(p, 1);
	uint32_t lo = 0, hi = EXPR_OP_COUNT;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const char *k = expr_ops[mid].code;
		if (k[0] == c0 && k[1] == c1) {
			p->pos += 2;
			return mid;
		}
		if (c0 < k[0] || (c0 == k[0] && c1 < k[1]))
			hi = mid;
		else
			lo = mid + 1;
	}
	return NONE;
}

static bool op_is_new_cast(uint32_t op)
{
	return op < EXPR_OP_COUNT && expr_ops[op].code[1] == 'c' &&
	       (expr_ops[op].code[0] == 's' || expr_ops[op].code[0] == 'd' || expr_ops[op].code[0] == 'c' ||
		expr_ops[op].code[0] == 'r');
}

/* Operands print bare when c++filt deems them simple, else in parentheses. */
static bool expr_simple(const struct demangle_node *d)
{
	return (d->kind == N_STR && (d->flags & NF_SIMPLE)) || d->kind == N_NESTED || d->kind == N_BRACE;
}

/* States of R_EXPR. f[3]: the operator (expr_ops index or OP_*), f[4]: the
 * operands read so far, f[5]: a state's own word. */
enum {
	X_OPERANDS = 1, /* reading the operator's operands */
	X_PRIMARY_ENC,	/* L_Z <encoding> E read: f[5] = the template args before */
	X_PRIMARY_TYPE, /* L <type> read, the value follows */
	X_NAME,		/* a name read (f[5]: its scope or NONE), template args may follow */
	X_TEMPLATE,	/* name and template args read */
	X_SCOPE,	/* sr <qualifier-level>+ E: f[5] = the scope so far */
	X_SCOPE_PART,	/* a qualifier level read */
	X_SCOPE_TYPE,	/* sr <type> read */
	X_EXPANSION,	/* sp <expression> read */
	X_MEMBER,	/* a member name after dt / pt (no operator) */
};

/* Calls R_TARGS on template args with no leading 'I' (sP, u): up to E. */
static void call_args_to_e(struct parser *p)
{
	call(p, R_TARGS);
	if (!p->fail) {
		uint32_t *g = p->w->frames[p->nframes - 1];
		g[1] = 1;
	}
}

static void call_exprlist(struct parser *p, char end)
{
	call(p, R_EXPRLIST);
	if (!p->fail)
		p->w->frames[p->nframes - 1][3] = (uint32_t)end;
}

/* Builds the expression once its operands are on the value stack. */
static void expr_finish(struct parser *p, uint32_t *f)
{
	uint32_t op = f[3], n = p->nvalues - f[2];
	uint32_t *v = p->w->values + f[2];
	uint32_t r = NONE;
	if (op == OP_CAST) {
		r = mk3(p, N_UNARY, v[0], v[1], NONE, 0, U_CAST);
	} else if (op == OP_TYPED) {
		r = mk3(p, N_BRACE, v[0], v[1], NONE, 0, 0);
	} else if (op == OP_BRACED) {
		r = mk3(p, N_BRACE, NONE, v[0], NONE, 0, 0);
	} else if (op == OP_VENDOR) {
		r = mk3(p, N_VENDOR, v[0], v[1], NONE, 0, 0);
	} else if (op >= EXPR_OP_COUNT || n != (uint32_t)expr_ops[op].arity - (expr_ops[op].code[0] == 'f')) {
		p->fail = true;
		return;
	} else {
		const struct expr_op *o = &expr_ops[op];
		char c0 = o->code[0], c1 = o->code[1];
		if (c0 == 'f') { /* folds: f[5] is the folded operator */
			r = mk3(p, N_FOLD, v[0], n > 1 ? v[1] : NONE, NONE, expr_ops[f[5]].text, (uint16_t)c1);
		} else if (o->arity == 0) {
			r = mk_cstr(p, o->text);
		} else if (o->arity == 1) {
			uint32_t x = v[0];
			if (c0 == 's' && (c1 == 'Z' || c1 == 'P')) {
				uint32_t count = 0;
				if (c1 == 'Z') {
					uint32_t pack = find_pack(p, x);
					count = pack == NONE ? 0 : nd(p, pack)->b;
				} else {
					const struct demangle_node *l = nd(p, x);
					for (uint32_t i = 0; i < l->b; i++) {
						const struct demangle_node *e = nd(p, p->w->lists[l->a + i]);
						count += e->kind == N_LIST && e->flags == 1 ? e->b : e->kind == N_PACK ? 0 : 1;
					}
				}
				r = mk_number_text(p, "", count, "");
			} else {
				uint16_t mode = U_PREFIX;
				if (c0 == 'a' && c1 == 'd' && nd(p, x)->kind == N_ENC && nd(p, x)->b != NONE &&
				    nd(p, nd(p, x)->b)->kind == N_NESTED)
					x = nd(p, x)->b; /* &A::f, without its parameters */
				if ((c0 == 'p' || c0 == 'm') && c1 == c0 && f[5])
					mode = U_SUFFIX;
				else if (c0 == 'g' && c1 == 's')
					mode = U_BARE;
				else if ((c0 == 's' && c1 == 't') || (c0 == 'n' && c1 == 'x'))
					mode = U_PARENS;
				r = mk3(p, N_UNARY, x, NONE, NONE, o->text, mode);
			}
		} else if (o->arity == 2) {
			uint16_t mode = B_PLAIN;
			uint32_t l = v[0];
			if (op_is_new_cast(op))
				mode = B_NEWCAST;
			else if (c0 == 'c' && c1 == 'l')
				mode = B_CALL;
			else if (c0 == 'i' && c1 == 'x')
				mode = B_INDEX;
			else if (c0 == 'g' && c1 == 't')
				mode = B_GT;
			if (mode == B_CALL && nd(p, l)->kind == N_ENC && nd(p, l)->b != NONE)
				l = nd(p, l)->b; /* a function called by name */
			if (c0 == 'd' && (c1 == 'i' || c1 == 'x'))
				r = mk3(p, N_DESIG, l, NONE, v[1], 0, (uint16_t)c1);
			else
				r = mk3(p, N_BINARY, l, v[1], NONE, o->text, mode);
		} else if (c0 == 'q') {
			r = mk3(p, N_TERNARY, v[0], v[1], v[2], 0, 0);
		} else if (c0 == 'd') { /* dX */
			r = mk3(p, N_DESIG, v[0], v[1], v[2], 0, 'X');
		} else { /* nw, na */
			r = mk3(p, N_NEW, nd(p, v[0])->b > 0 ? v[0] : NONE, v[1], v[2], 0, 0);
		}
	}
	ret(p, r);
}

/* Reads the next operand of f[3], or finishes. */
static void expr_operand(struct parser *p, uint32_t *f)
{
	uint32_t op = f[3], k = f[4]++;
	char c = peek(p), c1 = peek_at(p, 1);
	if (op == OP_CAST) {
		if (k == 0) {
			call(p, R_TYPE);
		} else if (k == 1 && c == '_') {
			p->pos++;
			call_exprlist(p, 'E');
		} else if (k == 1) {
			call(p, R_EXPR);
		} else {
			expr_finish(p, f);
		}
		return;
	}
	if (op == OP_VENDOR) {
		if (k == 0) {
			push_value(p, source_name(p));
			if (!p->fail)
				call_args_to_e(p);
		} else {
			expr_finish(p, f);
		}
		return;
	}
	if (op == OP_TYPED || op == OP_BRACED) {
		if (k == 0 && op == OP_TYPED)
			call(p, R_TYPE);
		else if (k == (op == OP_BRACED ? 0u : 1u))
			call_exprlist(p, 'E');
		else
			expr_finish(p, f);
		return;
	}
	const struct expr_op *o = &expr_ops[op];
	char c0 = o->code[0], k1 = o->code[1];
	uint32_t need = (uint32_t)o->arity - (c0 == 'f');
	if (k >= need) {
		expr_finish(p, f);
		return;
	}
	if (o->arity == 1) {
		if (c0 == 's' && k1 == 't')
			call(p, R_TYPE);
		else if (c0 == 's' && k1 == 'P')
			call_args_to_e(p);
		else
			call(p, R_EXPR);
		return;
	}
	if (o->arity == 2 && k == 0) {
		if (op_is_new_cast(op))
			call(p, R_TYPE);
		else if (c0 == 'd' && k1 == 'i')
			call(p, R_UNQUAL);
		else
			call(p, R_EXPR);
		return;
	}
	if (o->arity == 2 && k == 1 && c0 != 'f') {
		if (c0 == 'c' && k1 == 'l') {
			call_exprlist(p, 'E');
		} else if ((c0 == 'd' || c0 == 'p') && k1 == 't' && !((c == 'g' && c1 == 's') || (c == 's' && c1 == 'r'))) {
			call(p, R_EXPR);
			if (!p->fail) {
				p->w->frames[p->nframes - 1][1] = X_MEMBER;
				p->w->frames[p->nframes - 1][5] = NONE;
			}
		} else {
			call(p, R_EXPR);
		}
		return;
	}
	if (c0 == 'n' && k == 0) {
		call_exprlist(p, '_');
	} else if (c0 == 'n' && k == 1) {
		call(p, R_TYPE);
	} else if (c0 == 'n') { /* the initializer */
		if (c == 'E') {
			p->pos++;
			push_value(p, NONE);
			expr_finish(p, f);
		} else if (c == 'p' && c1 == 'i') {
			p->pos += 2;
			call_exprlist(p, 'E');
		} else if (c == 'i' && c1 == 'l') {
			call(p, R_EXPR);
		} else {
			p->fail = true;
		}
	} else {
		call(p, R_EXPR);
	}
}

__attribute__((noinline)) static void step_expr(struct parser *p, uint32_t *f)
{
	char c = peek(p), c1 = peek_at(p, 1);
	switch (f[1]) {
	case 0:
		if (c == 'L') {
			p->pos++;
			if (peek(p) == 'Z' || (peek(p) == '_' && peek_at(p, 1) == 'Z')) {
				p->pos += peek(p) == '_' ? 2u : 1u;
				f[1] = X_PRIMARY_ENC;
				f[5] = p->tparams;
				call(p, R_ENCODING);
				return;
			}
			char t0 = peek(p), t1 = peek_at(p, 1);
			uint32_t t = builtin_type(p);
			if (t != NONE) {
				ret(p, literal_value(p, t, t0, t1));
				return;
			}
			f[1] = X_PRIMARY_TYPE;
			call(p, R_TYPE);
			return;
		}
		if (c == 'T') {
			uint32_t t = template_param(p);
			/* T_ is never a simple operand in c++filt's printing. */
			if (t != NONE && expr_simple(nd(p, t)))
				t = mk_s(p, N_SUFFIX, t, "", 0);
			ret(p, t);
			return;
		}
		if (c == 'f' && c1 == 'p') {
			p->pos += 2;
			uint32_t idx = 0, n;
			if (peek(p) == 'T') {
				p->pos++;
				n = mk_cstr(p, "this");
			} else {
				bool neg;
				if (is_digit(peek(p))) {
					if (!number(p, &idx, &neg))
						return;
					idx++;
				}
				if (peek(p) != '_') {
					p->fail = true;
					return;
				}
				p->pos++;
				n = mk_number_text(p, "{parm#", idx + 1, "}");
			}
			if (n != NONE)
				nd(p, n)->flags = NF_SIMPLE;
			ret(p, n);
			return;
		}
		if (c == 's' && c1 == 'r') {
			p->pos += 2;
			c = peek(p);
			f[5] = NONE;
			if (p->sr_levels && (is_digit(c) || is_lower(c) || c == 'C' || c == 'U' || c == 'L')) {
				p->sr_levels_read = true;
				f[1] = X_SCOPE;
				return;
			}
			f[1] = X_SCOPE_TYPE;
			call(p, R_TYPE);
			return;
		}
		if (c == 's' && c1 == 'p') {
			p->pos += 2;
			f[1] = X_EXPANSION;
			call(p, R_EXPR);
			return;
		}
		if (is_digit(c) || (c == 'o' && c1 == 'n')) {
			if (c == 'o')
				p->pos += 2;
			f[1] = X_NAME;
			f[5] = NONE;
			call(p, R_UNQUAL);
			return;
		}
		f[1] = X_OPERANDS;
		if ((c == 't' || c == 'i') && c1 == 'l') {
			p->pos += 2;
			f[3] = c == 't' ? OP_TYPED : OP_BRACED;
		} else if (c == 'c' && c1 == 'v') {
			p->pos += 2;
			f[3] = OP_CAST;
		} else if (c == 'u') {
			p->pos++;
			f[3] = OP_VENDOR;
		} else {
			f[3] = expr_op(p);
			if (f[3] == NONE) {
				p->fail = true;
				return;
			}
			const char *code = expr_ops[f[3]].code;
			if ((code[0] == 'p' || code[0] == 'm') && code[1] == code[0]) {
				/* pp_ / mm_ are the prefix forms */
				f[5] = peek(p) != '_';
				if (!f[5])
					p->pos++;
			} else if (code[0] == 'f') {
				f[5] = expr_op(p); /* the folded operator */
				if (f[5] == NONE) {
					p->fail = true;
					return;
				}
			}
		}
		expr_operand(p, f);
		return;
	case X_OPERANDS:
		expr_operand(p, f);
		return;
	case X_PRIMARY_ENC: {
		p->tparams = f[5];
		if (c != 'E') {
			p->fail = true;
			return;
		}
		p->pos++;
		ret(p, pop_value(p, f[2]));
		return;
	}
	case X_PRIMARY_TYPE:
		ret(p, literal_value(p, pop_value(p, f[2]), 0, 0));
		return;
	case X_MEMBER: /* f[5]: the scope, or NONE */
		if (c == 'o' && c1 == 'n')
			p->pos += 2;
		f[1] = X_NAME;
		call(p, R_UNQUAL);
		return;
	case X_NAME: {
		uint32_t name = pop_value(p, f[2]);
		if (f[5] != NONE)
			name = mk2(p, N_NESTED, f[5], name);
		if (peek(p) == 'I') {
			push_value(p, name);
			f[1] = X_TEMPLATE;
			call(p, R_TARGS);
			return;
		}
		ret(p, name);
		return;
	}
	case X_TEMPLATE: {
		uint32_t args = pop_value(p, f[2]);
		uint32_t name = pop_value(p, f[2]);
		ret(p, mk2(p, N_TEMPLATE, name, args));
		return;
	}
	case X_SCOPE: /* the levels of sr ... E, then the name */
		if (c == 'E' && f[5] != NONE) {
			p->pos++;
			f[1] = X_MEMBER;
			return;
		}
		f[1] = X_SCOPE_PART;
		if (c == 'I' && f[5] != NONE) {
			call(p, R_TARGS);
		} else if (c == 'S' && c1 != 't' && f[5] == NONE) {
			f[5] = substitution(p);
			f[1] = X_SCOPE;
		} else if ((c == 'T' || (c == 'D' && (c1 == 't' || c1 == 'T'))) && f[5] == NONE) {
			call(p, R_TYPE);
		} else if (c == 'M') {
			p->pos++;
			f[1] = X_SCOPE;
		} else {
			call(p, R_UNQUAL);
		}
		return;
	case X_SCOPE_PART: {
		uint32_t part = pop_value(p, f[2]);
		const struct demangle_node *d = nd(p, part);
		if (d->kind == N_LIST)
			f[5] = mk2(p, N_TEMPLATE, f[5], part);
		else
			f[5] = f[5] == NONE ? part : mk2(p, N_NESTED, f[5], part);
		f[1] = X_SCOPE;
		return;
	}
	case X_SCOPE_TYPE:
		f[5] = pop_value(p, f[2]);
		f[1] = X_MEMBER;
		return;
	case X_EXPANSION: {
		uint32_t pattern = pop_value(p, f[2]);
		ret(p, mk3(p, N_EXPAND, pattern, NONE, pattern == NONE ? NONE : find_pack(p, pattern), 0, 0));
		return;
	}
	default:
		p->fail = true;
	}
}

/* <expression>* up to the character f[3]: a list. */
__attribute__((noinline)) static void step_exprlist(struct parser *p, uint32_t *f)
{
	char c = peek(p);
	if (c == (char)f[3]) {
		p->pos++;
		ret(p, mk_list(p, f[2]));
		return;
	}
	if (c == 0) {
		p->fail = true;
		return;
	}
	f[1] = 1;
	call(p, R_EXPR);
}

/* ---- printing ---- */

struct printer {
	char *out;
	size_t cap, len;
	bool fail;
	struct parser *p;
	uint32_t ntasks;
	uint32_t pack; /* the element of packs printed in an expansion, or NONE */
	char last;     /* what c++filt takes as the last character printed */
};

/* Print tasks: a node, or a fixed string. */
#define TASK_NODE 0u
#define TASK_STR 1u
#define TASK_CLOSE_ANGLE 2u
#define TASK_OPEN_ANGLE 3u
#define TASK_EXPAND 5u	/* node, element t[4] of its pack; t[2]: the pack index before */
#define TASK_SET_PACK 6u	/* the pack index becomes t[4] */
#define TASK_COMMA 7u	/* ", ", the length then noted in the TASK_UNCOMMA at t[4] */
#define TASK_UNCOMMA 8u	/* takes back ", " when nothing followed it (empty expansion) */
#define TASK_FN_OPEN 9u	/* "(" of a declarator inside another, after a space when t[4] says
			 * so or the last character is not '(', '*' or ' ' */

static void emit(struct printer *pr, const char *s, uint32_t n)
{
	if (n >= pr->cap - pr->len) {
		pr->fail = true;
		return;
	}
	/* Through locals: a char store may alias pr's fields. */
	char *d = pr->out + pr->len;
	for (uint32_t i = 0; i < n; i++)
		d[i] = s[i];
	pr->len += n;
	if (n > 0)
		pr->last = s[n - 1];
}

static void task(struct printer *pr, uint32_t kind, uint32_t node, const char *s, uint32_t len)
{
	if (pr->ntasks >= DEMANGLE_MAX_DEPTH) {
		pr->fail = true;
		return;
	}
	uint32_t *t = pr->p->w->frames[pr->ntasks++];
	t[0] = kind;
	t[1] = node;
	/* A pointer in two words. */
	uintptr_t v = (uintptr_t)s;
	t[2] = (uint32_t)v;
	t[3] = (uint32_t)((uint64_t)v >> 32);
	t[4] = len;
}

/* A string literal (its length known when compiled). */
#define task_str(pr, lit) task((pr), TASK_STR, NONE, "" lit, (uint32_t)sizeof(lit) - 1u)
static void task_node(struct printer *pr, uint32_t n)
{
	if (n == NONE) {
		pr->fail = true;
		return;
	}
	const struct demangle_node *d = nd(pr->p, n);
	if (d->kind == N_STR) /* printed as it is: no node task to expand */
		task(pr, TASK_STR, NONE, d->s, d->len);
	else
		task(pr, TASK_NODE, n, 0, 0);
}

/* Pushes the items of a list (to print in order). */
static bool may_print_nothing(const struct demangle_node *d)
{
	return d->kind == N_EXPAND || (d->kind == N_LIST && d->flags == 1);
}

/* c++filt joins a list with ", " and takes one back when all that follows
 * it printed nothing (empty packs); the last character it then counts is
 * the ' '.  Items after the last that surely prints something get a
 * ", " checked when the list is done (TASK_COMMA / TASK_UNCOMMA). */
static void task_list(struct printer *pr, uint32_t list)
{
	struct demangle_node *l = nd(pr->p, list);
	const uint32_t *items = pr->p->w->lists + l->a;
	uint32_t sure = l->b; /* 1-based index of the last item that prints */
	while (sure > 0 && may_print_nothing(nd(pr->p, items[sure - 1])))
		sure--;
	uint32_t first_check = sure < 1 ? 2 : sure + 1, base = pr->ntasks;
	for (uint32_t i = first_check; i <= l->b && !pr->fail; i++)
		task(pr, TASK_UNCOMMA, NONE, 0, 0);
	for (uint32_t i = l->b; i > 0 && !pr->fail; i--) {
		task_node(pr, items[i - 1]);
		if (i >= first_check)
			task(pr, TASK_COMMA, NONE, 0, base + (l->b - i));
		else if (i > 1)
			task_str(pr, ", ");
	}
}

/* An operand: bare when simple, else in parentheses. */
static void task_operand(struct printer *pr, uint32_t n)
{
	if (n != NONE && expr_simple(nd(pr->p, n))) {
		task_node(pr, n);
		return;
	}
	task_str(pr, ")");
	task_node(pr, n);
	task_str(pr, "(");
}

static void task_text(struct printer *pr, const struct demangle_node *d)
{
	task(pr, TASK_STR, NONE, d->s, d->len);
}

/* Expression nodes (tasks pushed in the reverse of printing). */
static void print_expr(struct printer *pr, uint32_t n)
{
	const struct demangle_node *d = nd(pr->p, n);
	switch (d->kind) {
	case N_UNARY:
		if (d->flags == U_SUFFIX) {
			task_text(pr, d);
			task_operand(pr, d->a);
		} else if (d->flags == U_PARENS) {
			task_str(pr, ")");
			task_node(pr, d->a);
			task_str(pr, "(");
			task_text(pr, d);
		} else if (d->flags == U_BARE) {
			task_node(pr, d->a);
			task_text(pr, d);
		} else if (d->flags == U_CAST) {
			task_operand(pr, d->b);
			task_str(pr, ")");
			task_node(pr, d->a);
			task_str(pr, "(");
		} else {
			task_operand(pr, d->a);
			task_text(pr, d);
		}
		return;
	case N_BINARY:
		if (d->flags == B_NEWCAST) {
			task_str(pr, ")");
			task_node(pr, d->b);
			task_str(pr, ">(");
			task_node(pr, d->a);
			task_str(pr, "<");
			task_text(pr, d);
			return;
		}
		if (d->flags == B_GT)
			task_str(pr, ")");
		if (d->flags == B_INDEX) {
			task_str(pr, "]");
			task_node(pr, d->b);
			task_str(pr, "[");
		} else {
			task_operand(pr, d->b);
			if (d->flags != B_CALL)
				task_text(pr, d);
		}
		task_operand(pr, d->a);
		if (d->flags == B_GT)
			task_str(pr, "(");
		return;
	case N_TERNARY:
		task_operand(pr, d->c);
		task_str(pr, " : ");
		task_operand(pr, d->b);
		task_str(pr, "?");
		task_operand(pr, d->a);
		return;
	case N_NEW:
		if (d->c != NONE)
			task_operand(pr, d->c);
		task_node(pr, d->b);
		if (d->a != NONE) {
			task_str(pr, " ");
			task_operand(pr, d->a);
		}
		task_str(pr, "new ");
		return;
	case N_FOLD: /* (... op a), (a op ...), (a op ... op b) */
		task_str(pr, ")");
		if (d->flags == 'l') {
			task_operand(pr, d->a);
			task_text(pr, d);
			task_str(pr, "(...");
			return;
		}
		if (d->flags == 'r') {
			task_str(pr, "...");
			task_text(pr, d);
		} else {
			task_operand(pr, d->b);
			task_text(pr, d);
			task_str(pr, "...");
			task_text(pr, d);
		}
		task_operand(pr, d->a);
		task_str(pr, "(");
		return;
	case N_DESIG: {
		const struct demangle_node *v = nd(pr->p, d->c);
		if (v->kind == N_DESIG) {
			task_node(pr, d->c);
		} else {
			task_operand(pr, d->c);
			task_str(pr, "=");
		}
		if (d->flags != 'i')
			task_str(pr, "]");
		if (d->flags == 'X') {
			task_node(pr, d->b);
			task_str(pr, " ... ");
		}
		task_node(pr, d->a);
		if (d->flags == 'i')
			task_str(pr, ".");
		else
			task_str(pr, "[");
		return;
	}
	case N_BRACE:
		task_str(pr, "}");
		task_list(pr, d->b);
		task_str(pr, "{");
		if (d->a != NONE)
			task_node(pr, d->a);
		return;
	case N_EXPAND:
		if (d->c == NONE) { /* no template argument pack: the pattern, "..." */
			task_str(pr, "...");
			task_operand(pr, d->a);
			return;
		}
		if (nd(pr->p, d->c)->b > 0)
			task(pr, TASK_EXPAND, n, (const char *)(uintptr_t)pr->pack, 0);
		return;
	case N_DECLTYPE:
		task_str(pr, ")");
		task_node(pr, d->a);
		task_str(pr, "decltype (");
		return;
	case N_VENDOR:
		task_str(pr, ")");
		task_list(pr, d->b);
		task_str(pr, "(");
		task_node(pr, d->a);
		return;
	default:
		pr->fail = true;
	}
}

/* An array's dimension: digits, or an expression. */
static void task_dim(struct printer *pr, const struct demangle_node *d)
{
	if (d->c != NONE)
		task_node(pr, d->c);
	else
		task(pr, TASK_STR, NONE, d->s, d->len);
}

static void task_quals(struct printer *pr, uint32_t q)
{
	/* Pushed in reverse: printed " const volatile restrict". */
	if (q & Q_RESTRICT)
		task_str(pr, " restrict");
	if (q & Q_VOLATILE)
		task_str(pr, " volatile");
	if (q & Q_CONST)
		task_str(pr, " const");
}

static void task_ref(struct printer *pr, uint32_t ref)
{
	if (ref == 1)
		task_str(pr, " &");
	else if (ref == 2)
		task_str(pr, " &&");
}

/* A vector's " __vector(dimension)" (pushed in reverse). */
static void task_vector(struct printer *pr, const struct demangle_node *d)
{
	task_str(pr, ")");
	task_node(pr, d->c);
	task_str(pr, " __vector(");
}

/* The function or array type under a chain of at least one pointer,
 * reference, qualifier, member pointer, vector or vendor qualifier from n;
 * else NONE. */
static uint32_t declarator_base(struct printer *pr, uint32_t n)
{
	uint32_t depth = 0;
	while (depth < 32 && n != NONE) {
		const struct demangle_node *d = nd(pr->p, n);
		if (d->kind != N_PTR && d->kind != N_QUAL && d->kind != N_MEMPTR && d->kind != N_VECTOR &&
		    d->kind != N_VQUAL)
			break;
		depth++;
		n = d->kind == N_MEMPTR ? d->b : d->a;
	}
	if (depth == 0 || n == NONE)
		return NONE;
	uint8_t k = nd(pr->p, n)->kind;
	return k == N_FUNC || k == N_ARRAY ? n : NONE;
}

/* A declarator chain: pointers/references/qualifiers/member pointers/vectors/
 * vendor qualifiers
 * around a function or array type print inside parentheses: void (*)(int).
 * Only vectors (and qualifiers of the function itself) around a function
 * print bare, after the return type and a space, as c++filt does:
 * void  __vector(4)(). */
/* Pushes a chain's links (outer first, so printed inner first). */
static void task_chain(struct printer *pr, const uint32_t *chain, uint32_t depth, uint32_t base)
{
	/* The innermost link that prints inside the parentheses: a member
	 * pointer outside it has a space before, void (* A::*)(). */
	uint32_t inner_printed = depth;
	for (uint32_t i = depth; i > 0 && inner_printed == depth; i--) {
		const struct demangle_node *d = nd(pr->p, chain[i - 1]);
		if (d->kind != N_QUAL || d->a != base)
			inner_printed = i - 1;
	}
	for (uint32_t i = 0; i < depth; i++) {
		struct demangle_node *d = nd(pr->p, chain[i]);
		if (d->kind == N_PTR) {
			task(pr, TASK_STR, NONE, d->s, d->len);
		} else if (d->kind == N_QUAL) {
			if (d->a != base)
				task_quals(pr, d->quals);
		} else if (d->kind == N_VECTOR) {
			task_vector(pr, d);
		} else if (d->kind == N_VQUAL) {
			task_node(pr, d->b);
			task_str(pr, " ");
		} else {
			task_str(pr, "::*");
			task_node(pr, d->a);
			if (inner_printed != depth && i < inner_printed)
				task_str(pr, " ");
		}
	}
}

/* Walks the chain of declarator links from n into chain[]; its base. */
static uint32_t declarator_chain(struct printer *pr, uint32_t n, uint32_t *chain, uint32_t *depth)
{
	uint32_t base = n;
	*depth = 0;
	while (*depth < 32) {
		const struct demangle_node *d = nd(pr->p, base);
		if (d->kind != N_PTR && d->kind != N_QUAL && d->kind != N_MEMPTR && d->kind != N_VECTOR &&
		    d->kind != N_VQUAL)
			break;
		chain[(*depth)++] = base;
		base = d->kind == N_MEMPTR ? d->b : d->a;
	}
	return base;
}

static bool task_declarator(struct printer *pr, uint32_t n, uint32_t outer)
{
	uint32_t chain[32], depth = 0, base = n;
	/* A declarator around a function that returns one: void (*(*)())()
	 * prints the outer chain and the function's parameters inside the
	 * inner declarator, where a function's name would be. */
	uint32_t outer_chain[32], outer_depth = 0, outer_base = NONE;
	struct demangle_node *b = 0;
	bool bare = false;
	for (uint32_t round = 0; round < 2; round++) {
		base = declarator_chain(pr, n, chain, &depth);
		b = nd(pr->p, base);
		if (depth == 32 && (b->kind == N_PTR || b->kind == N_QUAL || b->kind == N_MEMPTR ||
				    b->kind == N_VECTOR || b->kind == N_VQUAL)) {
			pr->fail = true; /* deeper than we print */
			return true;
		}
		/* A qualifier directly on the function (void (A::*)() const) is in
		 * the chain; it prints after the parameters. */
		if (depth == 0 || (b->kind != N_FUNC && b->kind != N_ARRAY))
			return false;
		bool only_quals = true, vectors = false;
		bare = b->kind == N_FUNC;
		for (uint32_t i = 0; i < depth; i++) {
			const struct demangle_node *d = nd(pr->p, chain[i]);
			only_quals = only_quals && d->kind == N_QUAL;
			vectors = vectors || d->kind == N_VECTOR;
			bare = bare && (d->kind == N_VECTOR || (d->kind == N_QUAL && d->a == base));
		}
		if (only_quals && b->kind == N_FUNC) {
			if (round == 0)
				return false; /* void () const: printed as a qualified function */
			pr->fail = true;
			return true;
		}
		bare = bare && vectors;
		if (bare && outer != NONE) {
			pr->fail = true; /* a function returning a vector of functions */
			return true;
		}
		if (b->kind != N_FUNC || b->a == NONE || declarator_base(pr, b->a) == NONE)
			break;
		if (round > 0 || outer != NONE || bare) {
			pr->fail = true; /* deeper nesting than this printer does */
			return true;
		}
		for (uint32_t i = 0; i < depth; i++)
			outer_chain[i] = chain[i];
		outer_depth = depth;
		outer_base = base;
		outer = base;
		n = b->a;
	}
	/* Reverse order of printing: suffix, ")", chain outer..inner, " (", base head. */
	uint32_t head = b->a;
	if (b->kind == N_FUNC) {
		task_ref(pr, b->c);
		for (uint32_t i = 0; i < depth; i++) {
			struct demangle_node *d = nd(pr->p, chain[i]);
			if (d->kind == N_QUAL && d->a == base)
				task_quals(pr, d->quals);
		}
		task_str(pr, ")");
		if (b->b != NONE)
			task_list(pr, b->b);
		if (bare)
			task_str(pr, "(");
		else
			task_str(pr, ")(");
	} else {
		/* int (*) [12][8]: the dimensions of nested arrays follow */
		uint32_t dims[32], k = 0, elem = base;
		while (k < 32 && nd(pr->p, elem)->kind == N_ARRAY) {
			dims[k++] = elem;
			elem = nd(pr->p, elem)->a;
		}
		if (nd(pr->p, elem)->kind == N_ARRAY) {
			pr->fail = true; /* deeper than we print */
			return true;
		}
		for (uint32_t i = k; i > 1; i--) {
			task_str(pr, "]");
			task_dim(pr, nd(pr->p, dims[i - 1]));
			task_str(pr, "[");
		}
		task_str(pr, "]");
		task_dim(pr, b);
		task_str(pr, ") [");
		head = elem;
	}
	if (outer != NONE) {
		/* A function returning this: its name and parameters go
		 * inside, int (*f(char))(int). */
		const struct demangle_node *o = nd(pr->p, outer);
		task_ref(pr, o->kind == N_ENC ? o->flags : o->c);
		if (o->kind == N_ENC)
			task_quals(pr, o->quals);
		for (uint32_t i = 0; i < outer_depth; i++) {
			const struct demangle_node *d = nd(pr->p, outer_chain[i]);
			if (d->kind == N_QUAL && d->a == outer_base)
				task_quals(pr, d->quals);
		}
		task_str(pr, ")");
		task_list(pr, o->kind == N_ENC ? o->c : o->b);
		task_str(pr, "(");
		if (o->kind == N_ENC)
			task_node(pr, o->b);
		if (outer_depth > 0) {
			/* c++filt's space: always before a qualifier or member
			 * pointer, before a pointer or reference only after a
			 * character other than '(' and '*' */
			uint32_t space = 0;
			for (uint32_t i = outer_depth; i > 0; i--) {
				const struct demangle_node *d = nd(pr->p, outer_chain[i - 1]);
				if ((d->kind == N_QUAL && d->a == outer_base) || d->kind == N_VECTOR)
					continue;
				space = d->kind != N_PTR;
				break;
			}
			task_str(pr, ")");
			task_chain(pr, outer_chain, outer_depth, outer_base);
			task(pr, TASK_FN_OPEN, NONE, 0, space);
		}
	}
	task_chain(pr, chain, depth, base);
	if (bare)
		task_str(pr, " ");
	else
		task_str(pr, " (");
	task_node(pr, head);
	return true;
}

static void print_task(struct printer *pr, uint32_t n)
{
	struct demangle_node *d = nd(pr->p, n);
	switch (d->kind) {
	case N_STR:
		emit(pr, d->s, d->len);
		return;
	case N_NESTED:
		task_node(pr, d->b);
		task_str(pr, "::");
		task_node(pr, d->a);
		return;
	case N_TEMPLATE:
		task(pr, TASK_CLOSE_ANGLE, NONE, 0, 0);
		task_list(pr, d->b);
		task(pr, TASK_OPEN_ANGLE, NONE, 0, 0);
		task_node(pr, d->a);
		return;
	case N_LIST:
		if (d->flags == 1 && pr->pack != NONE) {
			/* One element of a pack; packs inside it print whole. */
			if (pr->pack >= d->b) {
				pr->fail = true;
				return;
			}
			task(pr, TASK_SET_PACK, NONE, 0, pr->pack);
			task_node(pr, pr->p->w->lists[d->a + pr->pack]);
			task(pr, TASK_SET_PACK, NONE, 0, NONE);
			return;
		}
		task_list(pr, n);
		return;
	case N_QUAL:
	case N_PTR:
	case N_MEMPTR:
		if (task_declarator(pr, n, NONE))
			return;
		if (d->kind == N_QUAL && nd(pr->p, d->a)->kind == N_FUNC) {
			const struct demangle_node *fn = nd(pr->p, d->a);
			task_ref(pr, fn->c); /* void () const & */
			task_quals(pr, d->quals);
			task_str(pr, ")");
			task_list(pr, fn->b);
			task_str(pr, " (");
			task_node(pr, fn->a);
		} else if (d->kind == N_QUAL) {
			task_quals(pr, d->quals);
			task_node(pr, d->a);
		} else if (d->kind == N_PTR) {
			task(pr, TASK_STR, NONE, d->s, d->len);
			task_node(pr, d->a);
		} else {
			task_str(pr, "::*");
			task_node(pr, d->a);
			task_str(pr, " ");
			task_node(pr, d->b);
		}
		return;
	case N_FUNC:
		if (d->a != NONE && task_declarator(pr, d->a, n))
			return;
		task_ref(pr, d->c);
		task_str(pr, ")");
		task_list(pr, d->b);
		task_str(pr, " (");
		task_node(pr, d->a);
		return;
	case N_ARRAY: { /* int [3][4] */
		uint32_t dims[32], k = 0, elem = n;
		while (k < 32 && nd(pr->p, elem)->kind == N_ARRAY) {
			dims[k++] = elem;
			elem = nd(pr->p, elem)->a;
		}
		if (nd(pr->p, elem)->kind == N_ARRAY) {
			pr->fail = true; /* deeper than we print */
			return;
		}
		for (uint32_t i = k; i > 1; i--) {
			task_str(pr, "]");
			task_dim(pr, nd(pr->p, dims[i - 1]));
			task_str(pr, "[");
		}
		task_str(pr, "]");
		task_dim(pr, d);
		task_str(pr, " [");
		task_node(pr, elem);
		return;
	}
	case N_ENC:
		if (d->a != NONE && task_declarator(pr, d->a, n))
			return;
		task_ref(pr, d->flags);
		task_quals(pr, d->quals);
		task_str(pr, ")");
		task_list(pr, d->c);
		task_str(pr, "(");
		task_node(pr, d->b);
		if (d->a != NONE) {
			task_str(pr, " ");
			task_node(pr, d->a);
		}
		return;
	case N_PREFIX:
		task_node(pr, d->a);
		task(pr, TASK_STR, NONE, d->s, d->len);
		return;
	case N_SUFFIX:
		task(pr, TASK_STR, NONE, d->s, d->len);
		task_node(pr, d->a);
		return;
	case N_ABI:
		task_str(pr, "]");
		task(pr, TASK_STR, NONE, d->s, d->len);
		task_str(pr, "[abi:");
		task_node(pr, d->a);
		return;
	case N_PACK:
		task_str(pr, "...");
		task_operand(pr, d->a);
		return;
	case N_LAMBDA:
		task_str(pr, "}");
		task(pr, TASK_STR, NONE, d->s, d->len);
		task_str(pr, ")#");
		task_list(pr, d->b);
		task_str(pr, "{lambda(");
		return;
	case N_CAST:
		task(pr, TASK_STR, NONE, d->s, d->len);
		task_str(pr, ")");
		task_node(pr, d->a);
		task_str(pr, "(");
		return;
	case N_INFIX:
		task_node(pr, d->b);
		task(pr, TASK_STR, NONE, d->s, d->len);
		task_node(pr, d->a);
		return;
	case N_VECTOR: /* float __vector(4) */
	case N_VQUAL:  /* int AS1 */
		if (task_declarator(pr, n, NONE))
			return;
		if (d->kind == N_VECTOR) {
			task_vector(pr, d);
		} else {
			task_node(pr, d->b);
			task_str(pr, " ");
		}
		task_node(pr, d->a);
		return;
	default:
		print_expr(pr, n);
	}
}

/* Element i of the expansion n: ", " before all but the first, the pattern
 * with the pack index i, then the next element or the index restored. */
static void expand_step(struct printer *pr, uint32_t n, uint32_t before, uint32_t i)
{
	const struct demangle_node *d = nd(pr->p, n);
	uint32_t count = nd(pr->p, d->c)->b;
	if (i + 1 < count)
		task(pr, TASK_EXPAND, n, (const char *)(uintptr_t)before, i + 1);
	else
		task(pr, TASK_SET_PACK, NONE, 0, before);
	task_node(pr, d->a);
	task(pr, TASK_SET_PACK, NONE, 0, i);
	if (i > 0)
		task_str(pr, ", ");
}

static size_t print_tree(struct parser *p, uint32_t root, char *out, size_t cap)
{
	struct printer pr = {out, cap, 0, false, p, 0, NONE, 0};
	if (cap == 0)
		return 0;
	task_node(&pr, root);
	/* Every node is expanded once and each expansion pushes a bounded
	 * number of tasks, so this ends; the bound is a second guard. */
	uint32_t budget = 64u * DEMANGLE_MAX_NODES + 64u * DEMANGLE_MAX_INPUT;
	while (pr.ntasks > 0 && !pr.fail && budget-- > 0) {
		uint32_t *t = p->w->frames[--pr.ntasks];
		uint32_t kind = t[0], node = t[1];
		uintptr_t sv = (uintptr_t)((uint64_t)t[2] | (uint64_t)t[3] << 32);
		uint32_t len = t[4];
		if (kind == TASK_STR)
			emit(&pr, (const char *)sv, len);
		else if (kind == TASK_OPEN_ANGLE) /* operator< <int> */
			emit(&pr, pr.last == '<' ? " <" : "<", pr.last == '<' ? 2u : 1u);
		else if (kind == TASK_CLOSE_ANGLE)
			emit(&pr, pr.last == '>' ? " >" : ">", pr.last == '>' ? 2u : 1u);
		else if (kind == TASK_SET_PACK)
			pr.pack = len;
		else if (kind == TASK_COMMA) {
			emit(&pr, ", ", 2);
			if (len < pr.ntasks)
				p->w->frames[len][4] = (uint32_t)pr.len;
		} else if (kind == TASK_UNCOMMA) {
			if (pr.len == len && len >= 2)
				pr.len -= 2; /* c++filt keeps ' ' as the last character */
		} else if (kind == TASK_FN_OPEN) {
			bool space = len || (pr.last != '(' && pr.last != '*');
			if (space && pr.last != ' ')
				emit(&pr, " (", 2);
			else
				emit(&pr, "(", 1);
		} else if (kind == TASK_EXPAND)
			expand_step(&pr, node, (uint32_t)sv, len);
		else
			print_task(&pr, node);
	}
	if (pr.fail || pr.ntasks > 0) {
		out[0] = 0;
		return 0;
	}
	out[pr.len] = 0;
	return pr.len;
}

/* Clone suffixes: (.<lowercase or _ word>(.<digits>)*)* and .<digits>. */
static bool clone_suffixes(const char *s, uint32_t n)
{
	uint32_t i = 0;
	while (i < n) {
		if (s[i] != '.' || i + 1 >= n)
			return false;
		i++;
		if (is_lower(s[i]) || s[i] == '_') {
			while (i < n && (is_lower(s[i]) || s[i] == '_'))
				i++;
		} else if (!is_digit(s[i])) {
			return false;
		}
		while (i < n && s[i] == '.' && i + 1 < n && is_digit(s[i + 1])) {
			i++;
			while (i < n && is_digit(s[i]))
				i++;
		}
		while (i < n && is_digit(s[i]))
			i++;
	}
	return true;
}

size_t demangle_itanium(const char *name, size_t len, char *out, size_t cap,
			struct demangle_scratch *w)
{
	if (cap > 0)
		out[0] = 0;
	if (len < 3 || len > DEMANGLE_MAX_INPUT || name[0] != '_' || name[1] != 'Z' || cap == 0)
		return 0;
	struct parser p;
	/* sr followed by a name reads first as sr <level>+ E (the mangling
	 * now), and if the whole name then fails, as sr <type> <name> (the
	 * older one), as c++filt does. */
	for (uint32_t attempt = 0; attempt < 2; attempt++) {
		p.s = name;
		p.n = (uint32_t)len;
		p.pos = 2;
		p.w = w;
		p.nnodes = p.nvalues = p.nlists = p.nsubs = p.nframes = p.ntext = 0;
		p.tparams = NONE;
		p.tp_owner = NONE;
		p.in_lambda = 0;
		p.last_tparam = 0;
		p.ref_operand = p.qual_operand = p.sub_keep = false;
		p.fail = false;
		p.sr_levels = attempt == 0;
		p.sr_levels_read = false;
		p.name_template = p.name_ctor = false;
		p.name_quals = p.name_ref = 0;
		call(&p, R_ENCODING);
		uint32_t budget = 16u * DEMANGLE_MAX_INPUT + 4096u;
		while (!p.fail && p.nframes > 0 && budget-- > 0) {
			uint32_t *f = w->frames[p.nframes - 1];
			switch (f[0]) {
			case R_ENCODING: step_encoding(&p, f); break;
			case R_NAME: step_name(&p, f); break;
			case R_NESTED: step_nested(&p, f); break;
			case R_LOCAL: step_local(&p, f); break;
			case R_UNQUAL: step_unqual(&p, f); break;
			case R_TYPE: step_type(&p, f); break;
			case R_TARGS: step_targs(&p, f); break;
			case R_EXPR: step_expr(&p, f); break;
			case R_EXPRLIST: step_exprlist(&p, f); break;
			default: p.fail = true;
			}
		}
		bool ok = !p.fail && p.nframes == 0 && p.nvalues == 1 &&
			  (p.pos >= p.n || clone_suffixes(p.s + p.pos, p.n - p.pos));
		if (ok)
			break;
		if (!p.sr_levels_read)
			return 0;
	}
	if (p.fail || p.nframes > 0 || p.nvalues != 1)
		return 0;
	uint32_t root = w->values[0];
	if (p.pos < p.n) {
		if (!clone_suffixes(p.s + p.pos, p.n - p.pos))
			return 0;
		/* " [clone .cold]" for each dot-word group */
		const char *sfx = p.s + p.pos;
		uint32_t rest = p.n - p.pos, i = 0;
		while (i < rest && !p.fail) {
			uint32_t start = i++;
			while (i < rest && sfx[i] != '.')
				i++;
			while (i + 1 < rest && sfx[i] == '.' && is_digit(sfx[i + 1])) {
				i++;
				while (i < rest && is_digit(sfx[i]))
					i++;
			}
			uint32_t t = mk_text3(&p, " [clone ", 8, sfx + start, i - start, "]", 1);
			if (t == NONE)
				return 0;
			root = mk_s(&p, N_SUFFIX, root, nd(&p, t)->s, nd(&p, t)->len);
		}
		if (p.fail)
			return 0;
	}
	return print_tree(&p, root, out, cap);
}
