/* The profiler as a whole: recorder, collectors, scheduler and exporters.
 * Started by the constructor (or stowaway_start), stopped with a final
 * flush by the destructor at exit (or stowaway_stop). */
#ifndef STOWAWAY_CORE_PROFILER_H
#define STOWAWAY_CORE_PROFILER_H

#include <stdbool.h>
#include "config/config.h"

/* 0 on success (or already running), -errno when nothing could start. */
int profiler_start(const struct sw_config *cfg);
/* Stops collectors; with final_flush, exports the last period within
 * cfg->exit_timeout_ms.  0 when not running. */
int profiler_stop(bool final_flush);
/* Exports the current period now.  -ESRCH when not running. */
int profiler_flush(void);
/* The UUID of this process's profiles (new after fork), "" when stopped. */
const char *profiler_runtime_id(void);

#endif
