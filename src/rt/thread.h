/* Threads of our own (scheduler, samplers), created through the host's
 * pthread_create so the host's TLS and signal handlers stay valid in them. */
#ifndef STOWAWAY_RT_THREAD_H
#define STOWAWAY_RT_THREAD_H

#include <stdbool.h>
#include <stdint.h>

/* The host's pthread_create, found once (before any interposer of ours
 * forwards to it).  NULL if the host has none (static or no libpthread). */
typedef int (*host_pthread_create_fn)(unsigned long *thread, const void *attr,
				      void *(*start)(void *), void *arg);
host_pthread_create_fn thread_host_pthread_create(void);

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

/* Our own threads register their kernel tid so collectors skip them. */
void thread_mark_own(int tid);
bool thread_is_own(int tid);
/* Whether thread tid, one of ours, runs on a descriptor table of its own. */
bool thread_has_private_files(int tid);
/* A descriptor, in the calling thread's table, opened for writing on the
 * file the program's descriptor fd names now (for a thread on a private
 * table); -errno if none can be had.  The caller closes it. */
long thread_program_descriptor(int fd);
/* In a fork child no thread of ours survives. */
void thread_forget_own(void);

#endif
