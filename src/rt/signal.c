/* Installing our signal handlers with our own rt_sigreturn trampoline
 * (the host's libc is never involved). */
#include "rt/rt.h"
#include "rt/sys.h"

#define SA_SIGINFO_FLAG 4
#define SA_RESTART_FLAG 0x10000000

/* Returns from our handlers.  The unwinder recognises these exact bytes
 * (the same as the C libraries' or the vDSO's trampoline) as a signal frame. */
extern void stowaway_sigreturn(void) __attribute__((visibility("hidden")));
__asm__(ARCH_SIGRETURN_ASM);

long rt_signal_install(int sig, rt_signal_handler handler, struct sys_sigaction *previous)
{
	struct sys_sigaction sa;
	rt_memset(&sa, 0, sizeof(sa));
	sa.handler = (void *)handler;
	sa.flags = SA_SIGINFO_FLAG | SA_RESTART_FLAG | SA_RESTORER;
	sa.restorer = (void *)stowaway_sigreturn;
	/* Our sampling signals (SIGPROF and the real-time range) wait while one
	 * of our handlers runs: CPU and wall timers expire on the same kernel
	 * tick, and a nested signal would sample our handler instead of the
	 * program.  Deferred, it is delivered where the program was. */
	sa.mask = 1ull << (SIGPROF - 1);
	for (int rt = 32; rt <= 64; rt++)
		sa.mask |= 1ull << (rt - 1);
	return sys_rt_sigaction(sig, &sa, previous);
}

bool rt_signal_is_ours(int sig, rt_signal_handler handler)
{
	struct sys_sigaction now = { 0 };
	return sys_rt_sigaction(sig, NULL, &now) == 0 && now.handler == (void *)handler;
}

int rt_signal_find_free(int highest, int lowest)
{
	for (int sig = highest; sig >= lowest && sig > 0; sig--) {
		struct sys_sigaction old = { 0 };
		if (sys_rt_sigaction(sig, NULL, &old) == 0 && old.handler == (void *)0)
			return sig;
	}
	return -1;
}
