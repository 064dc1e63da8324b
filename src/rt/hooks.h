/* What every interposer needs: the attribute that exports a symbol from the
 * library (everything else is hidden), and the next definition of a symbol
 * after ours in the host's lookup order.
 *
 * The next definition is found with dlsym(RTLD_NEXT), a host function (see
 * host.h): never from a signal handler.  NULL when the host has no dlsym or
 * nothing after us defines the name.
 */
#ifndef STOWAWAY_RT_HOOKS_H
#define STOWAWAY_RT_HOOKS_H

#include <stdatomic.h>

#include "rt/host.h"

#define SW_EXPORT __attribute__((visibility("default")))

/* The next definition of `name` after ours, or NULL. */
static inline void *hook_next(const char *name)
{
	return host_dlsym(HOST_RTLD_NEXT, name);
}

/* hook_next(name), looked up until found and then kept in *cache (a library
 * defining it may be loaded later). */
static inline void *hook_next_cached(_Atomic(void *) *cache, const char *name)
{
	void *sym = atomic_load_explicit(cache, memory_order_acquire);
	if (sym)
		return sym;
	sym = hook_next(name);
	if (sym)
		atomic_store_explicit(cache, sym, memory_order_release);
	return sym;
}

/* The host's own definition of `name` (dlsym(RTLD_DEFAULT)), looked up
 * until found and then kept in *cache. */
static inline void *hook_host_cached(_Atomic(void *) *cache, const char *name)
{
	void *sym = atomic_load_explicit(cache, memory_order_acquire);
	if (sym)
		return sym;
	sym = host_dlsym(HOST_RTLD_DEFAULT, name);
	if (sym)
		atomic_store_explicit(cache, sym, memory_order_release);
	return sym;
}

/* dlsym returns a data pointer; POSIX specifies its conversion to a function
 * pointer, done here without a cast between the two kinds. */
#define HOOK_FN(fnptr, sym) __builtin_memcpy(&(fnptr), &(sym), sizeof(fnptr))

#endif
