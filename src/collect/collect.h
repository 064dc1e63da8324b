/* Collectors: everything that observes the host and feeds the recorder.
 * The profiler starts and stops them as a group; each enabled kind in the
 * configuration turns on its collector. */
#ifndef STOWAWAY_COLLECT_H
#define STOWAWAY_COLLECT_H

#include "collect/memguard.h" /* the memory guard the scheduler polls */
#include "config/config.h"
#include "profile/profile.h"

/* Starts the collectors of cfg->kinds feeding `rec`.  A collector that
 * cannot start logs why and stays off; the others still run.  Returns the
 * number of collectors running. */
int collect_start(const struct sw_config *cfg, struct recorder *rec);
/* Stops every collector (no signal or timer of ours stays armed). */
void collect_stop(void);
/* True while collectors run: the pthread_create interposer registers new
 * threads only then. */
bool collect_threads_active(void);
/* In a fork child (from the atfork handler): forgets the parent's threads
 * and pending samples, registers the forking thread and restarts the
 * sampler thread. */
void collect_after_fork_child(void);
/* Called on the finished profile of a period before it is encoded, e.g. to
 * add the live-heap snapshot, and to describe effective rates in comments. */
void collect_before_export(struct profile *finished);
/* With profiling on and STOWAWAY_FOLLOW_EXEC=false: removes this library
 * from the process's own LD_PRELOAD (in place, at start), so
 * no program it executes, by any path, inherits it.  Defined with the exec
 * interposers (library only). */
void exec_strip_own_preload(void);

#endif
