/* The contract every collector fulfils (cpu, wall, alloc, lock, exception),
 * through which the group (collect.h) starts, stops, ticks and flushes them.
 * A collector defines one `const struct collector` and keeps everything else
 * in its own header. */
#ifndef STOWAWAY_COLLECT_COLLECTOR_H
#define STOWAWAY_COLLECT_COLLECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "profile/profile.h"

/* One collector.  The group calls every function from its own threads
 * (constructor, scheduler, sampler, atfork handler), never from a signal
 * handler; a NULL function has nothing to do. */
struct collector {
	const char *name;
	uint32_t kinds;     /* SW_KIND_BIT()s of the profiles it feeds */
	bool needs_threads; /* starts after the first scan of /proc/self/task */
	/* Starts feeding rec; 0, or -errno after saying why (it then stays off). */
	int (*start)(const struct sw_config *cfg, struct recorder *rec);
	/* Stops: no signal or timer of its own stays armed. */
	void (*stop)(void);
	/* In a fork child: forget the parent's threads and pending samples. */
	void (*after_fork_child)(void);
	/* On the sampler thread every tick (10 to 100 ms, see collect.c), and
	 * about once a second. */
	void (*tick)(void);
	void (*each_second)(void);
	/* Moves what it still holds into `finished` before the period's
	 * profile is encoded. */
	void (*flush)(struct profile *finished);
	/* The pprof period of one of its kinds, as in effect now. */
	int64_t (*period)(const struct sw_config *cfg, enum sw_kind kind);
};

extern const struct collector cpu_collector, wall_collector, alloc_collector, lock_collector,
	exception_collector;

#endif
