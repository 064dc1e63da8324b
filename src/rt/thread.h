/* Threads of our own (scheduler, samplers), created through the host's
 * pthread_create so the host's TLS and signal handlers stay valid in them. */
#ifndef STOWAWAY_RT_THREAD_H
#define STOWAWAY_RT_THREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The host's pthread_create, found once (before any interposer of ours
 * forwards to it).  NULL if the host has none (static or no libpthread). */
typedef int (*host_pthread_create_fn)(unsigned long *thread, const void *attr,
				      void *(*start)(void *), void *arg);
host_pthread_create_fn thread_host_pthread_create(void);

/* The calling thread's stack [*lo, *hi), as its C library keeps it
 * (pthread_getattr_np and pthread_attr_getstack, found with dlsym: the
 * attribute object is opaque storage here, its layout glibc's or musl's),
 * without reading /proc/self/maps, whose cost grows with every thread's
 * stack mapping.  `sp`, an address on the stack, must lie inside.  For a
 * thread the program created (the main thread's bounds are the kernel's:
 * glibc reads the maps for them).  False if the host has no such functions
 * or they fail. */
bool thread_stack_bounds(uint64_t sp, uint64_t *lo, uint64_t *hi);

/* Starts fn(arg) on a detached thread that has every signal blocked except
 * libc's internal ones (setuid broadcast, cancellation), so the host's
 * signals are never delivered to us while the program's setuid still
 * reaches us.  0 or -errno.
 *
 * The thread first gives itself a descriptor table of its own, empty:
 * none of the program's descriptors (not even 0, 1, 2), so a file the
 * program closes is closed, and the program's descriptor system calls
 * keep the kernel's single-table shortcut.  A descriptor a thread of ours
 * opens is then valid in that thread only; the program's are reached
 * through thread_program_descriptor.  If the kernel or a seccomp filter
 * refuses, the thread shares the program's table as any thread does. */
int thread_spawn(void *(*fn)(void *), void *arg);
/* The same without waiting for the thread to start (thread_spawn waits
 * until it has marked itself as ours): for a fork child, whose own code
 * then never waits for a thread of ours to be scheduled.  thread_own_run
 * waits for threads still starting, so none misses a request. */
int thread_spawn_unwaited(void *(*fn)(void *), void *arg);

/* Our own threads register their kernel tid so collectors skip them. */
void thread_mark_own(int tid);
bool thread_is_own(int tid);
/* CPU time our threads have used in this process: the live ones' clocks
 * and what the ended ones used (a fork child starts from 0).  Any thread. */
uint64_t thread_own_cpu_ns(void);
/* Whether thread tid, one of ours, runs on a descriptor table of its own. */
bool thread_has_private_files(int tid);
/* A descriptor, in the calling thread's table, opened for writing on the
 * file the program's descriptor fd names now (for a thread on a private
 * table); -errno if none can be had.  The caller closes it. */
long thread_program_descriptor(int fd);
/* In a fork child no thread of ours survives. */
void thread_forget_own(void);

/* ---- running a function on every thread of ours ----
 * For what a thread can only do to itself (its capabilities, keep-caps,
 * securebits): the caller posts fn and a copy of arg (at most
 * THREAD_OWN_ARG_MAX bytes), and each thread of ours runs fn(copy) at its
 * next wake-up; they wake at once, since they wait only in
 * thread_own_sleep_until or on a word given to thread_own_wake_word.  A
 * thread busy elsewhere (an export in progress) runs it when it next waits.
 * fn runs on a thread of ours with every host signal blocked; it must only
 * make system calls. */
#define THREAD_OWN_ARG_MAX 64
typedef long (*thread_own_fn)(const void *arg);

struct thread_own_outcome {
	int threads;  /* threads of ours that were asked */
	int late;     /* of them, still not done at the timeout */
	int failed;   /* of them, fn returned < 0 (the first such value in error) */
	long error;
};

/* Runs fn on each live thread of ours and waits for all of them, at most
 * timeout_ns (also for another caller's request in progress).  The calling
 * thread, if it is ours, runs fn itself.  Nothing is asked in a process
 * that has no thread of ours, such as a vfork child sharing its parent's
 * memory.  Uses only system calls and futexes: callable from a signal
 * handler of the host, never from one of ours. */
struct thread_own_outcome thread_own_run(thread_own_fn fn, const void *arg, size_t len,
					 uint64_t timeout_ns);

/* Called by a thread of ours where it can take a request: runs the pending
 * one, if any.  One atomic load when there is none. */
void thread_own_service(void);
/* A thread of ours sleeps until the monotonic deadline, serving requests;
 * it returns early after a thread_own_interrupt. */
void thread_own_sleep_until(uint64_t deadline_ns);
/* Wakes every thread of ours in thread_own_sleep_until, so that a loop
 * around it rechecks its condition now (a stop) instead of at its next tick. */
void thread_own_interrupt(void);
/* A flag that says a thread of ours is alive: the thread clears it as it
 * ends (thread_flag_clear), and a stopper waits for that on the flag itself,
 * at most timeout_ns, instead of polling.  true once the flag is 0.  Any
 * word whose writers wake its futex waiters as they lower it will do (the
 * count of threads still starting is one). */
void thread_flag_clear(atomic_int *flag);
bool thread_flag_wait_clear(atomic_int *flag, uint64_t timeout_ns);
/* A thread of ours that waits on a futex word of its own (then serving
 * requests each time it wakes) asks to be woken through it. */
void thread_own_wake_word(atomic_int *word);

#endif
