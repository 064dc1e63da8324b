/* The registry of the host's threads: a fixed table of slots, filled by the
 * pthread_create interposer (before user code runs in the new thread) and
 * by scans of /proc/self/task (threads from before us, or raw clone).
 * Slots are read from signal handlers: no field a handler reads is ever
 * freed, only overwritten atomically. */
#ifndef STOWAWAY_COLLECT_THREADS_H
#define STOWAWAY_COLLECT_THREADS_H

#include "rt/rt.h"

#define THREADS_MAX 4096
/* getdents64 reads of /proc/self/task in one scan. */
#define TASK_DIR_READS_MAX 10000u
#define THREAD_NAME_MAX 16

struct thread_slot {
	/* The interposed blocking calls' fields (wall.h), alone in the slot's
	 * first cache line: a call's entry and exit touch only this line (and
	 * the thread-pointer map's), the sampler thread writes here only
	 * wall_stamp_seq.  wall_seq is odd while the thread is inside an
	 * interposed blocking call, whose frame wall_pc/sp/fp/ra describe
	 * (written by the thread before the seq becomes odd). */
	_Alignas(64) atomic_ullong wall_tp; /* thread pointer, for the hooks' slot lookup */
	atomic_ullong wall_pc, wall_sp, wall_fp, wall_ra, wall_callee;
	atomic_uint wall_seq;
	/* The odd wall_seq of a call whose end the wall sampler wants timed
	 * (it ticks slowly while every thread waits in a call): leaving that
	 * call, the thread stores the monotonic time in wall_left_ns, then
	 * wall_left_seq, before wall_seq moves on. */
	atomic_uint wall_stamp_seq;
	atomic_int wall_fd;         /* the blocking call's file descriptor, or -1 */
	atomic_ushort wall_kind;    /* its enum wall_state */
	uint16_t wall_depth;        /* the thread itself: nesting of blocking calls */

	atomic_int tid;           /* 0: free */
	atomic_int timer_id;      /* CPU timer, -1: none */
	/* CPU time of samples the ring had no room for, carried by the
	 * thread's next sample (handler-owned). */
	uint64_t cpu_carried_ns;
	/* The thread CPU time of its timer's first expiry since it was last
	 * armed, and the expiries delivered since (cpu.c). */
	atomic_ullong cpu_first_expiry_ns;
	atomic_ullong cpu_expiries;
	/* Bounds of the thread's stack mapping, 0 when unknown (the unwinder
	 * then finds them in its snapshot).  Written before the thread's timer
	 * is armed, read by its signal handler. */
	uint64_t stack_lo, stack_hi;
	/* The thread's slot in the span-context table (context.h), -1: none;
	 * set by the thread when it first sets a context. */
	atomic_int context_slot;
	/* Its stack is too small for a signal frame and our handler (musl's
	 * PTHREAD_STACK_MIN is 2 KiB): no collector ever signals it. */
	bool no_signals;
	bool scan_mark;           /* sampler thread only: seen by the current scan */
	atomic_uint wall_left_seq;
	/* 1 while wall_call_leave unblocks our signal: a sample delivered
	 * there was raised inside the call. */
	atomic_int wall_leave_state;
	uint64_t name_read_ns;    /* sampler thread only */
	char name[THREAD_NAME_MAX]; /* sampler thread only (comm) */
	/* 1 while a wall signal may be on its way to the thread. */
	atomic_int wall_inflight;
	/* Wall time the thread spent on a CPU (or waiting for one) that no
	 * running sample has carried yet: the next one takes it all. */
	atomic_ullong wall_owed_ns;
	/* Running samples that took wall_owed_ns (either signal handler). */
	atomic_uint wall_taken;
	/* When thread wall_born_tid registered itself at its start (stored
	 * before the tid): its first wall visit places the span since then. */
	atomic_int wall_born_tid;
	atomic_ullong wall_born_ns;
	atomic_ullong wall_left_ns; /* see wall_stamp_seq */
};

extern struct thread_slot thread_slots[THREADS_MAX];

/* Hooks the collectors give the registry: called when a thread is added
 * (on that thread when it registers itself, else on the sampler thread) or
 * removed.  Either may be NULL. */
struct thread_hooks {
	void (*added)(int slot, int tid, bool self);
	void (*removed)(int slot, int tid);
};
void threads_set_hooks(const struct thread_hooks *hooks);

/* Adds tid (idempotent; a slot already holding tid is re-announced as a
 * reused tid).  A thread registering itself passes the bounds of its stack
 * (0, 0 when unknown).  Returns the slot or -1 when the table is full. */
int threads_register(int tid, bool self, uint64_t stack_lo, uint64_t stack_hi);
/* Removes the slot if it still holds tid. */
void threads_unregister(int slot, int tid);
/* Reconciles the table with /proc/self/task: adds new threads, removes
 * gone ones, skips our own.  Returns live threads, or -errno (a listing
 * ended by a failed read adds what it saw and removes nothing). */
int threads_scan(void);
/* Slot of tid, or -1. */
int threads_find(int tid);
/* The thread's name, re-read from /proc at most once a second. */
const char *threads_name(int slot);
/* Forgets every slot without calling hooks (fork child).  Writes only the
 * slots this process used, so the rest of the table stays shared with the
 * parent (copy-on-write). */
void threads_reset(void);
/* The first slot at or after `from` that has held a thread since the last
 * reset (it may be free again), or -1.  Slots never used are all zero and
 * are never written: loops over the table visit only these. */
int threads_next_used(int from);

#endif
