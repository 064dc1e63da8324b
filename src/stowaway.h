/* stowaway public C API.
 *
 * The library starts itself from the environment when preloaded
 * (DD_PROFILING_ENABLED=true); these calls are for programs that want to
 * control it explicitly.  Every function is safe to call whether or not
 * profiling is enabled, and returns 0 on success or a negative errno value.
 *
 * To run with or without the library, declare the functions weak and test
 * the address before calling (see docs/api.md):
 *     #pragma weak stowaway_flush
 *     if (stowaway_flush) stowaway_flush();
 */
#ifndef STOWAWAY_H
#define STOWAWAY_H

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char *stowaway_version(void);

/* Starts profiling with the configuration read from the environment at load
 * time, even if DD_PROFILING_ENABLED was not set.  0 if already running. */
int stowaway_start(void);

/* Stops every collector and exports what was collected (bounded by
 * STOWAWAY_EXIT_TIMEOUT_MS).  0 if not running. */
int stowaway_stop(void);

/* Ends the current period now and exports it; returns once the export is
 * done (or its deadline passed).  -ESRCH when profiling is not running. */
int stowaway_flush(void);

#ifdef __cplusplus
}
#endif

#endif
