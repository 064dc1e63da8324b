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
 * reaches us.  0 or -errno. */
int thread_spawn(void *(*fn)(void *), void *arg);

/* Our own threads register their kernel tid so collectors skip them. */
void thread_mark_own(int tid);
bool thread_is_own(int tid);
/* In a fork child no thread of ours survives. */
void thread_forget_own(void);

#endif
