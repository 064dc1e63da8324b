/* Entry points: the constructor that starts profiling from the environment,
 * the destructor that flushes at exit, and the public API. */
#include "core/profiler.h"
#include "collect/collect.h"
#include "config/config.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/rt.h"
#include "rt/sys.h"
#include "stowaway.h"

#define AUX_AT_SECURE 23

/* Setuid/setgid programs (AT_SECURE) must not be influenced by the
 * environment of the user who started them: stay off. */
static bool process_is_secure(void)
{
	if (getauxval)
		return getauxval(AUX_AT_SECURE) != 0;
	return sys_getuid() != sys_geteuid() || sys_getgid() != sys_getegid();
}

/* Base name of the running executable, for the default service name. */
static void program_name(char *out, size_t cap)
{
	char path[512];
	out[0] = 0;
	if (rt_self_exe_path(path, sizeof(path)) <= 0)
		return;
	const char *base = path;
	for (const char *p = path; *p; p++)
		if (*p == '/')
			base = p + 1;
	rt_strlcpy(out, base, cap);
}

static bool config_loaded;

__attribute__((constructor)) static void stowaway_init(void)
{
	if (process_is_secure())
		return;
	char prog[256];
	program_name(prog, sizeof(prog));
	config_load(&sw_cfg, prog);
	config_loaded = true;
	if (!sw_cfg.enabled)
		return;
	exec_strip_own_preload();
	int r = profiler_start(&sw_cfg);
	if (r < 0)
		rt_error("profiling could not start (error %d); the program runs unprofiled", -r);
}

__attribute__((destructor)) static void stowaway_fini(void)
{
	(void)profiler_stop(true);
}

SW_EXPORT const char *stowaway_version(void) { return STOWAWAY_VERSION; }

SW_EXPORT int stowaway_start(void)
{
	if (!config_loaded)
		return -EPERM; /* secure process, or called before our constructor */
	return profiler_start(&sw_cfg);
}

SW_EXPORT int stowaway_stop(void) { return profiler_stop(true); }

SW_EXPORT int stowaway_flush(void) { return profiler_flush(); }

SW_EXPORT int stowaway_set_span(uint64_t local_root_span_id, uint64_t span_id)
{
	return context_set_span(local_root_span_id, span_id);
}

SW_EXPORT int stowaway_set_endpoint(const char *endpoint) { return context_set_endpoint(endpoint); }

SW_EXPORT int stowaway_set_label(const char *key, const char *value)
{
	return context_set_label(key, value);
}

SW_EXPORT int stowaway_clear_context(void) { return context_clear(); }

SW_EXPORT int stowaway_set_thread_name(const char *name)
{
	if (!name)
		return -EINVAL;
	char comm[16];
	rt_strlcpy(comm, name, sizeof(comm));
	return (int)sys_prctl(15 /* PR_SET_NAME */, (long)comm, 0, 0, 0);
}

SW_EXPORT int stowaway_runtime_id(char *buf, size_t size) { return profiler_runtime_id(buf, size); }

SW_EXPORT int stowaway_set_runtime_id(const char *runtime_id)
{
	return profiler_set_runtime_id(runtime_id);
}
