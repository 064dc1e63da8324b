/* The interposed C++ throw entry points.  Exported; only in the .so.
 *
 * __cxa_throw and __cxa_rethrow offer the throw to the sampler, then
 * forward to the next definition (libstdc++ or libc++abi), which raises the
 * exception; the unwinder crosses this frame through its .eh_frame entry
 * like any other C frame without a handler.  For a rethrow the type is the
 * caught exception's, from the ABI's __cxa_current_exception_type.
 *
 * The forwarding call is a tail jump: our frame is gone before the C++
 * unwinder walks the stack, which it does twice per throw (search, then
 * cleanup), so a throw costs no more loaded than without us (an extra
 * frame cost a quarter of a throw/catch: one more FDE lookup per phase).
 */
#include "collect/exception.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/sys.h"

#define CALLER_RA() ((uintptr_t)__builtin_return_address(0))
#define SIG_ABRT 6

/* Not declared noreturn either, for the same reason. */
typedef void (*throw_fn)(void *, void *, void (*)(void *));
typedef void (*rethrow_fn)(void);
typedef void *(*current_type_fn)(void);

enum next_id { CXA_THROW, CXA_RETHROW, CXA_CURRENT_TYPE, NEXT_COUNT };

static const char *const next_names[NEXT_COUNT] = {
	[CXA_THROW] = "__cxa_throw",
	[CXA_RETHROW] = "__cxa_rethrow",
	[CXA_CURRENT_TYPE] = "__cxa_current_exception_type",
};

/* Found on each use until found (a C++ runtime may be loaded by dlopen). */
static _Atomic(void *) next_fn[NEXT_COUNT];

static void *next_of(enum next_id id)
{
	return hook_next_cached(&next_fn[id], next_names[id]);
}

/* No runtime to raise the exception: what std::terminate would do. */
__attribute__((noreturn)) static void no_runtime(void)
{
	rt_error("__cxa_throw: no C++ runtime to forward to; aborting");
	(void)sys_tgkill((int)sys_getpid(), (int)sys_gettid(), SIG_ABRT);
	(void)sys_exit_group(134);
	__builtin_unreachable();
}

static void no_runtime_throw(void *obj, void *tinfo, void (*dest)(void *))
{
	(void)obj;
	(void)tinfo;
	(void)dest;
	no_runtime();
}

static void no_runtime_rethrow(void) { no_runtime(); }

/* Never return (the ABI declares them noreturn), but are not declared so
 * here: a noreturn function's last call is never made a tail jump. */
SW_EXPORT void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *));
SW_EXPORT void __cxa_rethrow(void);

SW_EXPORT void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *))
{
	if (RT_UNLIKELY(exception_should_sample()))
		exception_sample(tinfo, CALLER_RA());
	void *p = next_of(CXA_THROW);
	throw_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	if (!f)
		f = no_runtime_throw;
	f(obj, tinfo, dest);
}

SW_EXPORT void __cxa_rethrow(void)
{
	if (RT_UNLIKELY(exception_should_sample())) {
		void *p = next_of(CXA_CURRENT_TYPE);
		current_type_fn current;
		__builtin_memcpy(&current, &p, sizeof(p));
		exception_sample(current ? current() : NULL, CALLER_RA());
	}
	void *p = next_of(CXA_RETHROW);
	rethrow_fn f;
	__builtin_memcpy(&f, &p, sizeof(p));
	if (!f)
		f = no_runtime_rethrow;
	f();
}
