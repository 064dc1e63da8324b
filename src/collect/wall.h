/* Wall-clock profiler: every 1/wall_hz, the elapsed wall time of every live
 * host thread is attributed to the stack it is on, running or blocked,
 * without ever interrupting a blocked system call.
 *
 * Our sampler thread (collect.c) visits at most wall_max_threads threads
 * per tick (fair rotation).  A visit places the wall time since the thread's
 * previous visit, split by the thread's CPU clock and its schedstat:
 *  - its CPU time, and the time it waited for a CPU, go to its running
 *    samples (below), so they land where it used CPU, in its own code or
 *    inside a call, whenever the visits happen: with the CPU profile on,
 *    each CPU signal's sample carries the CPU time it stands for, and the
 *    visits owe the running samples only the waits for a CPU; without it,
 *    the visits owe them both;
 *  - the rest, time blocked, goes to the wait the visit finds it in; a
 *    thread found on a CPU or waiting for one left the wait the previous
 *    visit found (which also keeps its first wait for a CPU), and that
 *    wait gets it, once; one found on a CPU, not waiting at the previous
 *    visit, that entered interposed calls since blocked in a wait no visit
 *    saw: that time is held for the next wait a visit finds (a draw
 *    weighted by time blocked).
 * Where it waits, cheapest first:
 *  1. Inside an interposed call (wall_hooks.c): the call published its
 *     frame and return address and made wall_seq odd.  Its stack is unwound
 *     from our thread (UNWIND_FLAG_REMOTE), or found among the few stacks of
 *     calls the thread made recently from the same frame and return
 *     address, and accepted if wall_seq did not move (else read again once
 *     or twice while the thread is back in a call from the same frame).  A
 *     thread whose CPU clock moves during the visit runs in the call.
 *  2. Otherwise, if the thread's CPU clock has not moved since a stack was
 *     taken from its frozen system call, it has not run: that stack again.
 *  3. Otherwise, unless its CPU clock moves, /proc/self/task/TID/syscall
 *     (descriptor kept open, up to a budget that goes to the threads that
 *     move): off CPU, in a system call or not, its sp/pc are unwound
 *     remotely with the CFI tables, and accepted if the CPU clock did not
 *     move meanwhile; "running": it waits for a CPU.  Never reused from
 *     sp/pc alone (different callers reach the same ones), but a stack
 *     equal to the cached one keeps aggregating with it.
 * Quiet ticks: a tick that visited every thread and found each waiting in
 * an interposed call, having run little since its previous visit, asks each
 * to time its leaving of that call (wall_stamp_seq; wall_call_leave stores
 * wall_left_ns, then wall_left_seq, before wall_seq moves) and puts the next
 * tick 100 ms later, each further quiet tick twice as late up to 1 s (a
 * tick that is not quiet halves that length); the first thread to leave
 * such a call, or to start, wakes the sampler thread, and ticks at
 * 1/wall_hz follow (the first up to 100 ms after the previous tick when
 * every thread has its running samples taken by CPU signals).  A visit after a
 * timed leaving gives the span up to it to the call's stack and places the
 * rest as though a visit had been made then.  A thread whose running
 * samples are the CPU signals' and that ran a fair part of the span is
 * quiet too ("flat") wherever the visit finds it (running, waiting, in a
 * call or not), unless it left a call meanwhile and is found nowhere:
 * while flat threads run the quiet ticks come at most 100 ms apart, less
 * when their CPU signals would fill half the ring first.  The visits then
 * only hand over waits for a CPU and draw where blocked time goes: in a
 * stretched span in which the thread entered calls, the wait the visit
 * finds, or the next one found when it finds the thread running.  A thread that
 * ended after leaving a call it timed still gets the span up to its
 * leaving.
 * Running samples: each CPU-profile signal (its timer on the thread's CPU
 * clock) makes one, of the CPU time it stands for plus all the time owed,
 * on the stack the CPU sample unwound: one signal and one unwind for both
 * profiles.  Time owed that no
 * CPU signal took within CARRY_PATIENCE CPU periods (a thread that runs
 * little), or on a thread without a CPU timer, or where calls block our
 * signal (below): a one-shot POSIX timer of the wall profile's own on the
 * thread's CPU clock, delivered to that thread, makes it unwind itself in
 * our signal handler, which takes it.  Either signal comes only while the
 * thread is on a CPU, so where it lands is a CPU-weighted draw.
 * Delivered inside an interposed call (as the call ends and unblocks it),
 * the sample has that call's published pc, its callers and its state.  On
 * kernels that expire CPU timers in task work (x86-64 >= 5.10) the signal
 * is raised on the return to user mode, so it never interrupts a system
 * call at all; one raised during a system call we did not interpose is
 * delivered right after its instruction, and that sample's state is
 * "syscall".
 * Handshake (covers every kernel for the interposed calls): while the
 * thread owes time, the sampler sets wall_inflight, then reads wall_seq; a
 * blocking call makes wall_seq odd, then reads wall_inflight (both
 * sequentially consistent), and blocks our signal for its duration if the
 * flag is set.  The timer is armed only once wall_seq has left the odd
 * value read after the flag went up, so every interposed call the signal
 * can reach has blocked it: a late signal stays pending until the call
 * returned.  ppoll/pselect/epoll_pwait/sigsuspend masks always keep our
 * signal blocked.  Where CPU-clock timers expire in task work the block is
 * skipped (it costs two system calls per call while a request runs): the
 * signal is raised only on a return to user mode, so it cannot interrupt a
 * call; raised inside one (wall_seq odd, in the wrapper or in the C
 * library's part, which may have no unwind tables), the handler unwinds
 * from the call's published frame, not from the interrupted registers.
 */
#ifndef STOWAWAY_COLLECT_WALL_H
#define STOWAWAY_COLLECT_WALL_H

#include "config/config.h"
#include "profile/profile.h"

/* The label "state" of a sample: what the thread was doing (docs/configuration.md). */
enum wall_state {
	WALL_STATE_RUNNING = 0, /* in its own code, on a CPU or waiting for one */
	WALL_STATE_SLEEPING,    /* nanosleep, clock_nanosleep, pause */
	WALL_STATE_WAITING,     /* futex, poll/select/epoll, wait4, semaphores, pipes */
	WALL_STATE_NETWORK,     /* socket calls, read/write on a socket */
	WALL_STATE_IO,          /* read/write on other files */
	WALL_STATE_SYSCALL,     /* any other system call, blocked or on a CPU */
	WALL_STATE_COUNT
};
const char *wall_state_name(enum wall_state s);
/* State of thread tid blocked in system call `nr` of this architecture
 * whose first argument is `arg0` (a descriptor for read/write-like calls,
 * which is classified through /proc/self/task/TID/fd: the blocked thread's
 * own table, wherever the caller runs; tid 0: /proc/self/fd). */
enum wall_state wall_state_of_syscall(int tid, long nr, uint64_t arg0);
/* What thread tid waiting on its descriptor fd is: network (socket),
 * waiting (pipe), io. */
enum wall_state wall_state_of_fd(int tid, int fd);

/* Parses the text of /proc/PID/task/TID/syscall: "running" (nr = -2),
 * "-1 sp pc" (not in a system call, nr = -1) or "nr a0 .. a5 sp pc".
 * False if malformed. [signal-safe] */
struct wall_syscall_info {
	long nr;
	uint64_t arg0;
	uint64_t sp, pc;
};
bool wall_parse_syscall(const char *text, size_t len, struct wall_syscall_info *out);
/* Parses the text of /proc/PID/task/TID/schedstat ("exec_ns run_delay_ns
 * timeslices"): the time the thread has waited for a CPU, and how many
 * times it got one.  False if malformed. [signal-safe] */
bool wall_parse_schedstat(const char *text, size_t len, uint64_t *run_delay, uint64_t *timeslices);

/* Starts the wall sampler (0 or -errno); its ticks run on the sampler
 * thread (wall_serve).  Stop waits for a tick under way (bounded). */
int wall_start(const struct sw_config *cfg, struct recorder *rec);
void wall_stop(void);
bool wall_running(void);
/* Thread registry hooks: start a thread's wall clock / forget it. */
void wall_thread_added(int slot, int tid, bool self);
void wall_thread_removed(int slot, int tid);
/* Before a period's profile is encoded: samples still in the ring go in. */
void wall_drain(void);
/* Ticks per second (the overhead cap lowers it), and the CPU time the
 * ticks have taken on the sampler thread, with the wake-ups they made:
 * what the rate costs. */
void wall_set_rate(uint32_t hz);
uint32_t wall_rate(void);
uint64_t wall_cpu_ns(void);
/* The ticks are served by the collector group's sampler thread
 * (collect.c), which wakes once for its own tick and the wall's where they
 * meet: when the next wall tick is due (UINT64_MAX while stopped), the
 * tick itself (sampler thread only; a stop waits for one under way), and
 * whether a sampler thread serves them (raised before it is spawned,
 * lowered when it could not be or has ended: until then wall_drain leaves
 * the ring to it).  wall_serve is given the thread's CPU clock as it went
 * to sleep (the wake-up is the wall's cost) and returns it after the tick. */
uint64_t wall_next_tick_ns(void);
uint64_t wall_serve(uint64_t cpu_before);
void wall_served(bool serving);
/* In a fork child: forget the parent's descriptors and timers. */
void wall_after_fork_child(void);
/* No tick is served until the sampler thread starts, once the process (or
 * fork child) lives on; a process that exits at once creates none.  Called
 * on the thread of `slot` (the constructor's, or a fork child's forking
 * thread) before the sampler exists: its first visit is now, so its first
 * sample covers the time before the sampler started, split by its CPU
 * clock (from its reading now) as any span is. */
void wall_clocks_begin_here(int slot, int tid);

/* ---- for the interposed blocking calls (wall_hooks.c) ---- */

/* What a blocking call publishes about itself: its own frame and its
 * return address. */
struct wall_frame {
	uint64_t pc, sp, fp, ra;
	uint64_t callee; /* entry of the C library's function called; 0: none */
};
/* Per-call state kept on the caller's stack between enter and leave: the
 * frame, filled by the caller before enter publishes it. */
struct wall_call {
	struct wall_frame frame;
	int slot;     /* -1: not tracked */
	bool masked;  /* our signal was blocked for the call */
	uint64_t old_mask;
};
/* What every interposed blocking call reads, in one 64-byte aligned cache
 * line, apart from what the sampler thread writes at each tick.  Hidden,
 * so loaded straight, not through the GOT. */
#define WALL_HOT_HOOKS 7
struct wall_hook_line {
	atomic_int on; /* the sampler runs: hooks do nothing otherwise */
	/* Interposed calls block our signal while a request runs: false where
	 * the kernel raises CPU-timer signals only on the return to user mode,
	 * so a signal cannot interrupt a call (set before `on`). */
	bool calls_block;
	/* The next definitions of the calls request loops make most
	 * (wall_hooks.c says which), found on their first call. */
	_Atomic(void *) next[WALL_HOT_HOOKS];
};
extern struct wall_hook_line wall_hook_line __attribute__((visibility("hidden")));
static inline bool wall_hooks_active(void)
{
	return atomic_load_explicit(&wall_hook_line.on, memory_order_relaxed) != 0;
}
/* Around the blocking call.  enter publishes c->frame and the state, and
 * blocks our signal when one may be in flight. */
void wall_call_enter(struct wall_call *c, enum wall_state kind, int fd);
void wall_call_leave(struct wall_call *c);
/* The signal a sigmask passed to ppoll/pselect/epoll_pwait/sigsuspend must
 * keep blocked (0 when none). */
int wall_signal(void);

/* ---- for the CPU profile's signal handler (cpu.c) ---- */

/* The CPU profile's sampling period per thread (0: CPU sampling off), as
 * it starts, changes rate and stops. */
void wall_cpu_period(uint64_t ns);
struct context_value;
/* In the CPU profile's handler on the thread of `slot` (ucontext ucv): a
 * running sample of cpu_ns (the CPU time the CPU sample stands for; 0 when
 * the next one carries it) plus the wall time owed to the thread's running
 * samples, on the stack the CPU sample took (pcs/depth and its span
 * context, NULL: none; pcs NULL: no CPU sample, unwound here), or on the
 * published call's when the signal came inside an interposed call.  Does
 * nothing where the wall profile keeps its own signal for all samples
 * (calls_block). [signal-safe] */
void wall_running_sample(int slot, const void *ucv, uint64_t cpu_ns, const uint64_t *pcs, uint32_t depth,
			 const struct context_value *ctx);

/* On the thread of `slot` as it ends, its CPU timer disarmed, samples at
 * "[unsampled]" under the thread's routine entry_pc (called from ra; 0:
 * "[unsampled]" alone), as the CPU profile takes its missed expiries:
 *  - where running samples are the CPU signals' (not calls_block), the
 *    running time none took: what the visits owe it, and cpu_ns (CPU time
 *    past expiries the kernel had not delivered);
 *  - for a thread that registered itself at its start and ends before any
 *    visit, its life but for the CPU time its running samples carry, in
 *    the state of the last call it timed. */
void wall_thread_ending(int slot, uint64_t cpu_ns, uint64_t entry_pc, uintptr_t ra);

/* Counters since start (tests, logs). */
struct wall_stats {
	uint64_t ticks;
	uint64_t samples_blocked_published; /* case 1 */
	uint64_t samples_blocked_cached;    /* cases 1 and 2 reusing a stack */
	uint64_t samples_blocked_syscall;   /* case 3 */
	uint64_t samples_running;           /* running samples, from a handler */
	uint64_t samples_carried;           /* of those, taken by CPU-profile signals */
	uint64_t requests_cancelled;        /* running requests that never fired */
	uint64_t unstable;                  /* stacks rejected because the thread moved */
	uint64_t dropped;                   /* ring full */
};
void wall_get_stats(struct wall_stats *out);

#endif
