/* C++ exception sampling and the type-name demangler (exception.h). */
#include "collect/exception.h"
#include "collect/collector.h"
#include "collect/sample.h"

#include "rt/sys.h"

#define EXC_MAX_FRAMES 128u
#define EXC_OWN_FRAMES 8u
#define EXC_TYPE_CAP 256u
/* Pointer and cv qualifiers kept around one type (PPKc...). */
#define MAX_QUALS 16u
/* Components of one nested name (a::b::c...). */
#define MAX_COMPONENTS 32u

struct exception_hot exception_hot;

static struct {
	_Atomic(struct recorder *) rec;
	atomic_ullong every;
	uint32_t max_frames;
	atomic_ullong samples;
	atomic_ullong record_failed;
} st;

/* ---- the demangler ---- */

struct out {
	char *buf;
	size_t cap, len;
	bool full;
};

static void put_n(struct out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (o->len + 1 >= o->cap) {
			o->full = true;
			return;
		}
		o->buf[o->len++] = s[i];
	}
	if (o->cap)
		o->buf[o->len] = 0;
}

static void put(struct out *o, const char *s) { put_n(o, s, rt_strlen(s)); }

struct builtin {
	char code;
	const char *name;
};

static const struct builtin builtins[] = {
	{ 'v', "void" },	       { 'w', "wchar_t" },	     { 'b', "bool" },
	{ 'c', "char" },	       { 'a', "signed char" },	     { 'h', "unsigned char" },
	{ 's', "short" },	       { 't', "unsigned short" },    { 'i', "int" },
	{ 'j', "unsigned int" },       { 'l', "long" },		     { 'm', "unsigned long" },
	{ 'x', "long long" },	       { 'y', "unsigned long long" }, { 'n', "__int128" },
	{ 'o', "unsigned __int128" }, { 'f', "float" },		     { 'd', "double" },
	{ 'e', "long double" },	       { 'g', "__float128" },
};

static const struct builtin d_builtins[] = {
	{ 'n', "decltype(nullptr)" }, { 's', "char16_t" }, { 'i', "char32_t" }, { 'u', "char8_t" },
};

/* Standard abbreviations S<x> (x not 't'), spelled out as c++filt -t does. */
static const struct builtin std_abbrevs[] = {
	{ 'a', "std::allocator" },
	{ 'b', "std::basic_string" },
	{ 's', "std::basic_string<char, std::char_traits<char>, std::allocator<char> >" },
	{ 'i', "std::basic_istream<char, std::char_traits<char> >" },
	{ 'o', "std::basic_ostream<char, std::char_traits<char> >" },
	{ 'd', "std::basic_iostream<char, std::char_traits<char> >" },
};

static const char *lookup(const struct builtin *t, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].code == c)
			return t[i].name;
	return NULL;
}

/* <source-name> ::= <length> <identifier>; "_GLOBAL__N..." is the anonymous
 * namespace.  Returns the position after it, or NULL. */
static const char *source_name(const char *s, struct out *o)
{
	size_t len = 0;
	size_t digits = 0;
	while (*s >= '0' && *s <= '9' && digits < 5) {
		len = len * 10u + (size_t)(*s - '0');
		s++;
		digits++;
	}
	if (digits == 0 || len == 0 || rt_strnlen(s, len) < len)
		return NULL;
	if (len >= 10 && rt_strncmp(s, "_GLOBAL__N", 10) == 0)
		put(o, "(anonymous namespace)");
	else
		put_n(o, s, len);
	return s + len;
}

/* ABI tags after a name: B <source-name> ... printed as [abi:tag]. */
static const char *abi_tags(const char *s, struct out *o)
{
	for (uint32_t i = 0; i < MAX_COMPONENTS && s && *s == 'B'; i++) {
		put(o, "[abi:");
		s = source_name(s + 1, o);
		put(o, "]");
	}
	return s;
}

/* N [components] E, St <name>, S<abbrev>, or <source-name>. */
static const char *class_name(const char *s, struct out *o)
{
	if (s[0] == 'S' && s[1] == 't') {
		put(o, "std::");
		return abi_tags(source_name(s + 2, o), o);
	}
	if (s[0] == 'S') {
		const char *abbrev = lookup(std_abbrevs, RT_ARRAY_LEN(std_abbrevs), s[1]);
		if (!abbrev)
			return NULL;
		put(o, abbrev);
		return s + 2;
	}
	if (s[0] != 'N')
		return abi_tags(source_name(s, o), o);
	s++;
	for (uint32_t i = 0; i < MAX_COMPONENTS; i++) {
		if (*s == 'E')
			return i > 0 ? s + 1 : NULL;
		if (i > 0)
			put(o, "::");
		if (i == 0 && s[0] == 'S' && s[1] == 't') {
			put(o, "std");
			s += 2;
			continue;
		}
		if (i == 0 && s[0] == 'S' && lookup(std_abbrevs, RT_ARRAY_LEN(std_abbrevs), s[1])) {
			put(o, lookup(std_abbrevs, RT_ARRAY_LEN(std_abbrevs), s[1]));
			s += 2;
			continue;
		}
		s = abi_tags(source_name(s, o), o);
		if (!s)
			return NULL;
	}
	return NULL;
}

bool exception_demangle(const char *mangled, char *out, size_t cap)
{
	struct out o = { out, cap, 0, false };
	if (cap)
		out[0] = 0;
	if (!mangled)
		return false;
	char quals[MAX_QUALS];
	uint32_t nq = 0;
	const char *s = mangled;
	while ((*s == 'P' || *s == 'K' || *s == 'R' || *s == 'O' || *s == 'V' || *s == 'r') &&
	       nq < MAX_QUALS)
		quals[nq++] = *s++;
	const char *name = NULL;
	if (*s == 'D' && s[1])
		name = lookup(d_builtins, RT_ARRAY_LEN(d_builtins), s[1]);
	else if (*s)
		name = lookup(builtins, RT_ARRAY_LEN(builtins), *s);
	if (name) {
		put(&o, name);
		s += *s == 'D' ? 2 : 1;
	} else {
		s = class_name(s, &o);
	}
	/* Innermost qualifier first: PKc is "char const*". */
	for (uint32_t i = nq; s && i > 0; i--) {
		switch (quals[i - 1]) {
		case 'P':
			put(&o, "*");
			break;
		case 'R':
			put(&o, "&");
			break;
		case 'O':
			put(&o, "&&");
			break;
		case 'K':
			put(&o, " const");
			break;
		case 'V':
			put(&o, " volatile");
			break;
		default:
			put(&o, " restrict");
			break;
		}
	}
	if (!s || *s != 0 || o.full) {
		if (cap)
			rt_strlcpy(out, mangled, cap);
		return false;
	}
	return true;
}

const char *exception_type_info_name(const void *tinfo)
{
	if (!tinfo)
		return NULL;
	const char *name;
	rt_memcpy(&name, (const char *)tinfo + sizeof(void *), sizeof(name));
	if (name && name[0] == '*')
		name++;
	return name;
}

/* ---- sampling ---- */

uint64_t exception_collector_period(void)
{
	uint64_t n = atomic_load_explicit(&st.every, memory_order_relaxed);
	return n ? n : EXCEPTION_DEFAULT_SAMPLE_EVERY;
}

void exception_sample(const void *tinfo, uintptr_t ra)
{
	struct recorder *rec = atomic_load(&st.rec);
	if (!rec)
		return;
	atomic_fetch_add(&st.samples, 1);
	uint64_t buf[EXC_MAX_FRAMES + EXC_OWN_FRAMES];
	uint32_t depth = 0;
	uint32_t cap = RT_MIN(st.max_frames, EXC_MAX_FRAMES) + EXC_OWN_FRAMES;
	uint32_t first = sample_capture_caller(ra, 0, 0, buf, cap, &depth);
	char type[EXC_TYPE_CAP];
	const char *mangled = exception_type_info_name(tinfo);
	if (mangled)
		(void)exception_demangle(mangled, type, sizeof(type));
	else
		rt_strlcpy(type, "[unknown]", sizeof(type));
	struct sw_value value = { SW_V_EXCEPTION_SAMPLES, (int64_t)exception_collector_period() };
	struct sw_label labels[2] = {
		{ SW_LABEL_EXCEPTION_TYPE, type, 0, NULL },
		{ SW_LABEL_THREAD_ID, NULL, (int64_t)sys_gettid(), NULL },
	};
	struct sw_sample s = { buf + first, depth, &value, 1, labels, 2 };
	if (recorder_add(rec, &s) != PROFILE_ADD_OK)
		atomic_fetch_add(&st.record_failed, 1);
}

int exception_collector_start(const struct sw_config *cfg, struct recorder *rec)
{
	if (!(cfg->kinds & SW_KIND_BIT(SW_KIND_EXCEPTION)))
		return -EINVAL;
	uint32_t every = cfg->exception_sample_every;
	sample_random_seed();
	atomic_store(&st.every, every);
	atomic_store(&exception_hot.threshold, UINT64_MAX / every);
	st.max_frames = cfg->max_frames ? cfg->max_frames : 64u;
	atomic_store(&st.rec, rec);
	atomic_store(&exception_hot.sampling, 1);
	rt_info("exception profiler on: one throw in %u sampled on average", every);
	return 0;
}

void exception_collector_stop(void) { atomic_store(&exception_hot.sampling, 0); }

static int64_t exception_period(const struct sw_config *cfg, enum sw_kind kind)
{
	RT_UNUSED(cfg);
	RT_UNUSED(kind);
	return (int64_t)exception_collector_period();
}

const struct collector exception_collector = {
	.name = "exception",
	.kinds = SW_KIND_BIT(SW_KIND_EXCEPTION),
	.start = exception_collector_start,
	.stop = exception_collector_stop,
	.period = exception_period,
};
