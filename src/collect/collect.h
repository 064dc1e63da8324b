/* Collectors: everything that observes the host and feeds the recorder.
 * This header is the whole of what the profiler (core/) sees of them: the
 * group that runs every collector through its contract (collector.h).  Each
 * enabled kind in the configuration turns on the collector that feeds it. */
#ifndef STOWAWAY_COLLECT_H
#define STOWAWAY_COLLECT_H

#include <stddef.h>

#include "collect/context.h" /* the span context the public API sets */
#include "collect/memguard.h" /* the memory guard the scheduler polls */
#include "config/config.h"
#include "profile/profile.h"

/* Starts the collectors of cfg->kinds feeding `rec`, without the sampler
 * thread (collect_start_threads).  A collector that cannot start logs why
 * and stays off; the others still run.  Returns the number of collectors
 * running. */
int collect_start(const struct sw_config *cfg, struct recorder *rec);
/* Stops every collector (no signal or timer of ours stays armed). */
void collect_stop(void);
/* True while collectors run: the pthread_create interposer registers new
 * threads only then. */
bool collect_threads_active(void);
/* In a fork child (from the atfork handler): forgets the parent's threads
 * and pending samples and registers the forking thread, whose CPU timer
 * runs from now; the sampler thread is not started there either. */
void collect_after_fork_child(void);
/* Starts the sampler thread, once the process (or fork child) has lived on:
 * one that exits at once makes none.  Samples taken before wait in the
 * rings, and the exit path drains them itself.  From a thread of ours. */
void collect_start_threads(void);
/* The stack of the caller of the function that calls this (return
 * addresses minus one, as samples hold them), without our own frames, into
 * pcs (room for cap); returns the depth.  Not for signal handlers. */
uint32_t collect_stack_of_caller(uint64_t *pcs, uint32_t cap);
/* True (once) when a sample met code outside every module the registry
 * knows since this was last asked or the sampler thread refreshed: only
 * then does the module registry need a refresh before naming pcs. */
bool collect_take_unknown_code(void);
/* The sampler thread's next tick after one of tick_ns in which the CPU
 * handlers took `samples`: 10 ms while the lock profiler runs
 * (lock_epochs: its epoch is that tick), else stretched up to 100 ms,
 * at most doubling per tick, so that about 64 samples wait in the ring
 * between drains at that rate.  After a tick without samples it may grow
 * on, still doubling, up to idle_max_ns (the time the threads there would
 * take to fill half the ring) but never past 1 s. */
uint64_t collect_next_tick_ns(uint64_t tick_ns, uint64_t samples, bool lock_epochs,
			      uint64_t idle_max_ns);
/* Called on the finished profile of a period before it is encoded: each
 * collector's flush (e.g. the live-heap snapshot). */
void collect_before_export(struct profile *finished);
/* In a fork child: true when its live-heap table holds only allocations its
 * parent made (none was sampled since the fork), so its live heap is part
 * of what the parent's own heap profile shows.  False where the live heap
 * is not tracked. */
bool collect_heap_only_inherited(void);
/* Whether any request was counted since the last take. */
bool collect_endpoint_counts_pending(void);
/* Requests per trace endpoint since the previous call (the hotspots API's
 * stowaway_set_endpoint counts them): calls fn for each and resets the
 * counts; returns how many requests could not be told apart. */
uint64_t collect_endpoint_counts_take(void (*fn)(void *ctx, const char *name, uint64_t count),
				      void *ctx);
/* The pprof period of a kind's profile (1 for a kind no collector feeds). */
int64_t collect_period(const struct sw_config *cfg, enum sw_kind kind);
/* One line for every profile's comments: the effective rates and what the
 * overhead cap did.  Returns its length. */
size_t collect_describe(char *buf, size_t cap);
/* With profiling on and STOWAWAY_FOLLOW_EXEC=false: removes this library
 * from the process's own LD_PRELOAD (in place, at start), so
 * no program it executes, by any path, inherits it.  Defined with the exec
 * interposers (library only). */
void exec_strip_own_preload(void);

#endif
