/* dlopen/dlclose interposition: the module registry (symbols and unwind
 * tables) and the OpenTelemetry thread-context sites are refreshed right
 * after code appears (the new objects added from the loader's list, see
 * symbols_add_loaded) or disappears, and the
 * unwinder stops reading code bytes while a library is being unmapped.
 * Exported; only in the .so. */
#include "collect/collect.h"
#include "collect/otel_context.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/rt.h"
#include "symbols/symbols.h"
#include "unwind/unwind.h"


typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

SW_EXPORT void *dlopen(const char *file, int mode);
SW_EXPORT void *dlopen(const char *file, int mode)
{
	static _Atomic(dlopen_fn) next;
	dlopen_fn fn = atomic_load(&next);
	if (!fn) {
		void *sym = hook_next("dlopen");
		__builtin_memcpy(&fn, &sym, sizeof(fn));
		atomic_store(&next, fn);
	}
	if (!fn)
		return NULL;
	void *handle = fn(file, mode);
	if (handle && collect_threads_active()) {
		if (!symbols_add_loaded())
			(void)symbols_refresh();
		otel_context_dlopened(handle);
	}
	return handle;
}

SW_EXPORT int dlclose(void *handle);
SW_EXPORT int dlclose(void *handle)
{
	static _Atomic(dlclose_fn) next;
	dlclose_fn fn = atomic_load(&next);
	if (!fn) {
		void *sym = hook_next("dlclose");
		__builtin_memcpy(&fn, &sym, sizeof(fn));
		atomic_store(&next, fn);
	}
	if (!fn)
		return -1;
	if (!collect_threads_active())
		return fn(handle);
	unwind_code_reads_pause();
	int r = fn(handle);
	(void)symbols_refresh();
	otel_context_refresh();
	unwind_code_reads_resume();
	return r;
}
