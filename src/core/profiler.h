/* The profiler as a whole: recorder, collectors, scheduler and exporters.
 * Started by the constructor (or stowaway_start), stopped with a final
 * flush by the destructor at exit (or stowaway_stop). */
#ifndef STOWAWAY_CORE_PROFILER_H
#define STOWAWAY_CORE_PROFILER_H

#include <stdbool.h>
#include <stddef.h>
#include "config/config.h"

/* 0 on success (or already running), -errno when nothing could start. */
int profiler_start(const struct sw_config *cfg);
/* Stops collectors; with final_flush, exports the last period within
 * cfg->exit_timeout_ms.  0 when not running. */
int profiler_stop(bool final_flush);
/* Exports the current period now.  -ESRCH when not running. */
int profiler_flush(void);
/* Copies the UUID of this process's profiles (new after fork) into buf:
 * 0, -ESRCH when stopped, -ERANGE when buf is too small. */
int profiler_runtime_id(char *buf, size_t size);
/* Adopts a tracer's runtime id (a UUID, stored lower-case) for this and
 * every later profile of this process, also before profiling starts;
 * -EINVAL when id is not a UUID.  A fork child starts with a new random id. */
int profiler_set_runtime_id(const char *id);

#endif
