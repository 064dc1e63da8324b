/* C++ exception sampling.
 *
 * The interposed __cxa_throw and __cxa_rethrow (exception_hooks.c, only in
 * the .so) forward to the next definition (libstdc++ or libc++abi); before
 * that, while the collector runs, each throw is sampled independently with
 * probability 1/N (N = STOWAWAY_EXCEPTION_SAMPLE_EVERY, default 20) and
 * recorded with weight N as exception-samples, with the throwing stack and
 * the "exception type" label: the std::type_info name demangled here (the
 * common cases: plain and nested names, std:: abbreviations, anonymous
 * namespaces, builtin, pointer and const types; anything else is kept
 * mangled).  No call into the C++ runtime is made to name a type.
 */
#ifndef STOWAWAY_COLLECT_EXCEPTION_H
#define STOWAWAY_COLLECT_EXCEPTION_H

#include "collect/sample.h"
#include "config/config.h"
#include "profile/profile.h"
#include "rt/rt.h"

/* Enables sampling (cfg->kinds has SW_KIND_EXCEPTION); reads
 * STOWAWAY_EXCEPTION_SAMPLE_EVERY.  0 or -EINVAL (kind not enabled). */
int exception_collector_start(const struct sw_config *cfg, struct recorder *rec);
void exception_collector_stop(void);
/* N, the mean number of throws per sample: the pprof period. */
uint64_t exception_collector_period(void);

#define EXCEPTION_DEFAULT_SAMPLE_EVERY 20u

struct exception_hot {
	atomic_int sampling;
	/* (2^64-1) / N: a throw is sampled when a uniform draw is not above it. */
	_Atomic uint64_t threshold;
};
extern struct exception_hot exception_hot;

/* True when this throw is to be sampled (one flag test when off). */
static inline bool exception_should_sample(void)
{
	if (RT_LIKELY(!atomic_load_explicit(&exception_hot.sampling, memory_order_relaxed)))
		return false;
	return sample_random_u64() <= atomic_load_explicit(&exception_hot.threshold, memory_order_relaxed);
}

/* Records one sampled throw of an object of type `tinfo` (a std::type_info
 * pointer, NULL if unknown); `ra`: the hook's return address. */
void exception_sample(const void *tinfo, uintptr_t ra);

/* The mangled name held by a std::type_info (Itanium ABI: the second
 * pointer-sized word), without GCC's leading '*'; NULL for NULL. */
const char *exception_type_info_name(const void *tinfo);

/* Demangles an Itanium type name (the string of type_info::name(), e.g.
 * "St13runtime_error", "N3app5ErrorE", "PKc") as c++filt -t would print
 * it, into out[cap] (always terminated when cap > 0).  Returns false, with
 * the mangled name copied, when the name uses a construct not handled here
 * (templates, functions, ...). */
bool exception_demangle(const char *mangled, char *out, size_t cap);

#endif
