/* Clocks: monotonic and realtime through the vDSO's clock_gettime once the
 * symbol registry has found it (a system call costs 0.1-0.5 us on VMs, the
 * vDSO 20 ns); CPU-time clocks, which the vDSO would pass to the kernel
 * anyway, and everything before that, through raw system calls. */
#include "rt/rt.h"
#include "rt/sys.h"

#include <linux/resource.h>

typedef int (*vdso_clock_fn)(int clockid, struct __kernel_timespec *ts);
static atomic_uintptr_t vdso_clock; /* vdso_clock_fn, 0: none */

static uint64_t syscall_clock_ns(int clockid)
{
	struct __kernel_timespec ts = { 0, 0 }; /* the analyzers cannot see the syscall write it */
	if (sys_clock_gettime(clockid, &ts) != 0)
		return 0;
	return sys_timespec_ns(&ts);
}

uint64_t rt_clock_ns(int clockid)
{
	uintptr_t fn = atomic_load_explicit(&vdso_clock, memory_order_acquire);
	if (fn != 0 && (clockid == CLOCK_MONOTONIC || clockid == CLOCK_REALTIME)) {
		struct __kernel_timespec ts = { 0, 0 };
		if (((vdso_clock_fn)fn)(clockid, &ts) == 0)
			return sys_timespec_ns(&ts);
	}
	return syscall_clock_ns(clockid);
}

bool rt_clock_use_vdso(uintptr_t fn)
{
	if (fn == 0)
		return false;
	/* Trust it only if it agrees with the kernel. */
	struct __kernel_timespec ts = { 0, 0 };
	uint64_t before = syscall_clock_ns(CLOCK_MONOTONIC);
	int r = ((vdso_clock_fn)fn)(CLOCK_MONOTONIC, &ts);
	uint64_t after = syscall_clock_ns(CLOCK_MONOTONIC);
	uint64_t mid = sys_timespec_ns(&ts);
	if (r != 0 || before == 0 || mid < before || mid > after) {
		rt_log_once(RT_LOG_WARN, "the vDSO's clock_gettime disagrees with the kernel; "
					 "clocks are read through system calls");
		return false;
	}
	atomic_store_explicit(&vdso_clock, fn, memory_order_release);
	return true;
}

const char *rt_clock_source(void)
{
	return atomic_load_explicit(&vdso_clock, memory_order_relaxed) ? "the vDSO" : "system calls";
}

uint64_t rt_monotonic_ns(void) { return rt_clock_ns(CLOCK_MONOTONIC); }
uint64_t rt_realtime_ns(void) { return rt_clock_ns(CLOCK_REALTIME); }
uint64_t rt_thread_cpu_ns(void) { return syscall_clock_ns(CLOCK_THREAD_CPUTIME_ID); }
uint64_t rt_process_cpu_ns(void) { return syscall_clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

uint64_t rt_children_cpu_ns(void)
{
	struct rusage ru;
	rt_memset(&ru, 0, sizeof(ru)); /* the analyzers cannot see the syscall write it */
	if (sys_getrusage(RUSAGE_CHILDREN, &ru) != 0)
		return 0;
	uint64_t us = (uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec +
		      (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
	return us * 1000u;
}

bool rt_sleep_ns(uint64_t ns)
{
	struct __kernel_timespec ts = sys_timespec_of_ns(ns);
	return sys_clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL) == 0;
}
