/* CPU-time profiler: one POSIX timer per thread on that thread's CPU clock,
 * delivered to that thread.  The handler unwinds into a preallocated ring;
 * the sampler thread drains the ring into the recorder. */
#ifndef STOWAWAY_COLLECT_CPU_H
#define STOWAWAY_COLLECT_CPU_H

#include "config/config.h"
#include "profile/profile.h"

/* Installs the handler and prepares the ring; timers are armed as threads
 * are registered (cpu_thread_added).  0 or -errno. */
int cpu_start(const struct sw_config *cfg, struct recorder *rec);
void cpu_stop(void);
bool cpu_running(void);
/* Thread registry hooks: arm / disarm the thread's timer. */
void cpu_thread_added(int slot, int tid, bool self);
void cpu_thread_removed(int slot, int tid);
/* On a thread that ends (its routine returned), before it is removed: the
 * expiries of its timer that the kernel had not delivered (its CPU time
 * passed them after the last signal it was sent; late under load) become
 * one sample at "[unsampled]" under entry_pc, the routine's address, and
 * the stack of the caller whose return address is ra (none while the
 * thread blocks our signal).  cpu_stop does the same for the thread that
 * calls it, with entry_pc 0: "[unsampled]" alone.  Then, profiling CPU or
 * not, the wall profile's part of the ending (wall_thread_ending). */
void cpu_thread_ending(int slot, uint64_t entry_pc, uintptr_t ra);
/* Sampler thread: moves finished samples into the recorder. */
void cpu_drain(void);
/* Sampler thread, about once a second: stops CPU sampling (and says so once)
 * if the program replaced our signal handler. */
void cpu_check_handler(void);
/* In a fork child: pending records of the parent's threads are dropped. */
void cpu_after_fork_child(void);
/* How long `threads` threads, each on a CPU all the time, take at the rate
 * in effect to fill half of the ring; UINT64_MAX when CPU sampling is off. */
uint64_t cpu_ring_half_fill_ns(uint32_t threads);
/* Samples dropped because the ring was full, and taken, since start. */
uint64_t cpu_samples_dropped(void);
uint64_t cpu_samples_taken(void);
int cpu_signal(void);
/* For the overhead cap (collect/overhead.h): CPU time spent inside the
 * handler by the samples measured (one in eight is), and their number. */
void cpu_handler_cost(uint64_t *measured_ns, uint64_t *measured_samples);
/* The kernel's part of a sample (signal delivery and return, plus one
 * tgkill), measured by signalling the calling thread, which must be one of
 * our own.  0 when CPU sampling is off or the handler is not ours. */
uint64_t cpu_delivery_cost_ns(void);
/* CPU time cpu_drain spent recording samples since start (it grows with
 * the rate; it runs on our threads, so it is part of their CPU time). */
uint64_t cpu_drain_cost_ns(void);
/* Re-arms every thread's timer (and those armed later) at hz samples per
 * second of thread CPU time; 0 is ignored.  cpu_rate(): the rate in effect. */
void cpu_set_rate(uint32_t hz);
uint32_t cpu_rate(void);

#endif
