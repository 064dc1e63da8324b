/* Credentials our threads must share with the program: capset and the
 * prctl options that decide what a later setuid/setgid does.
 *
 * Capabilities and securebits (keep-caps among them) belong to a thread in
 * Linux, but setuid, setgid, setgroups and friends are process-wide in
 * POSIX: glibc (SIGSETXID) and musl (__synccall) make every thread, ours
 * included, run the same system call, and end the process (glibc abort,
 * musl SIGKILL) when one thread's call fails after another's succeeded.
 * A root program that sets keep-caps, drops its uid, restores its
 * capabilities with capset and then changes its gid (setpriv, capsh, many
 * daemons) would fail in our threads, which still had the old keep-caps
 * and lost CAP_SETGID with the uid.  So after the program's call succeeds,
 * each thread of ours makes the same change before the call returns.
 *
 * Replayed (each changes what a later set*id call is allowed or does):
 *   capset: the effective set is what set*id checks (CAP_SETUID,
 *     CAP_SETGID); replayed as the caller's resulting sets (read back with
 *     capget), whatever header version or pid the program passed.
 *   PR_SET_KEEPCAPS, PR_SET_SECUREBITS: keep-caps and NO_SETUID_FIXUP
 *     decide whether a uid change clears the permitted and effective sets.
 * Not replayed (per-thread too, but no set*id result depends on them):
 *   PR_CAPBSET_DROP, PR_CAP_AMBIENT and PR_SET_NO_NEW_PRIVS only shape
 *   execve, which our threads never call; the bounding set also limits
 *   capset's inheritable set, and ours, never reduced, is a superset of
 *   the program's, so a replayed capset is never refused for it.
 *
 * Why replay each call rather than copy the caller's state later (from
 * /proc/self/task/N/status): a uid change without keep-caps empties a
 * thread's permitted set for good, so keep-caps must be set in our threads
 * before the program's setuid, i.e. at the program's prctl; securebits and
 * keep-caps are not in /proc and only a thread itself can read them; and
 * only a thread itself can call capset.  For capset the replay does use
 * the caller's state (capget), which a copy would read.
 *
 * Only calls through these symbols are seen: a raw syscall(SYS_capset) or
 * syscall(SYS_prctl) is not (libcap and libcap-ng call the libc
 * functions).  A program that never calls them pays nothing; prctl's other
 * options only forward. */
#include "rt/hooks.h"
#include "rt/rt.h"
#include "rt/sys.h"
#include "rt/thread.h"

#define PR_SET_KEEPCAPS_OP 8
#define PR_SET_SECUREBITS_OP 28
#define CAP_VERSION_3 0x20080522u
#define CAP_WORDS 2
/* Our threads are idle or wake at least every 100 ms (and at once for a
 * request); an export in progress may hold the scheduler longer. */
#define REPLAY_TIMEOUT_NS (2000ull * 1000 * 1000)

struct cap_header {
	uint32_t version;
	int pid;
};

struct cap_data {
	uint32_t effective;
	uint32_t permitted;
	uint32_t inheritable;
};

struct prctl_replay {
	long option;
	long value;
};

static long apply_caps(const void *arg)
{
	struct cap_data data[CAP_WORDS];
	rt_memcpy(data, arg, sizeof(data));
	struct cap_header h = { CAP_VERSION_3, 0 };
	return SYS2(__NR_capset, &h, data);
}

static long apply_prctl(const void *arg)
{
	struct prctl_replay p;
	rt_memcpy(&p, arg, sizeof(p));
	return sys_prctl((int)p.option, p.value, 0, 0, 0);
}

static void replay(thread_own_fn fn, const void *arg, size_t len, const char *what)
{
	struct thread_own_outcome o = thread_own_run(fn, arg, len, REPLAY_TIMEOUT_NS);
	if (o.late)
		rt_warn("%d of our threads did not take the program's %s within %llu ms; a later "
			"setuid or setgid may fail in them and end the program",
			o.late, what, REPLAY_TIMEOUT_NS / 1000000);
	if (o.failed)
		rt_warn("our threads could not make the program's %s (error %ld); a later setuid or "
			"setgid may fail in them and end the program",
			what, -o.error);
}

typedef int (*capset_fn)(void *header, void *data);
typedef int (*prctl_fn)(int option, unsigned long a2, unsigned long a3, unsigned long a4,
			unsigned long a5);
static _Atomic(void *) next_capset, next_prctl;

SW_EXPORT int capset(void *header, void *data);
SW_EXPORT int capset(void *header, void *data)
{
	capset_fn next = NULL;
	void *sym = hook_next_cached(&next_capset, "capset");
	HOOK_FN(next, sym);
	if (!next)
		return -1;
	int r = next(header, data);
	if (r != 0)
		return r;
	struct cap_header h = { CAP_VERSION_3, 0 };
	struct cap_data now[CAP_WORDS];
	if (SYS2(__NR_capget, &h, now) == 0)
		replay(apply_caps, now, sizeof(now), "capability change");
	return r;
}

/* prctl is variadic in both libcs; the integer arguments are passed in the
 * same registers either way (x86-64, AArch64), so they are taken as five
 * and forwarded as five, as the libcs read them. */
SW_EXPORT int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		    unsigned long a5);
SW_EXPORT int prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		    unsigned long a5)
{
	prctl_fn next = NULL;
	void *sym = hook_next_cached(&next_prctl, "prctl");
	HOOK_FN(next, sym);
	if (!next)
		return -1;
	int r = next(option, a2, a3, a4, a5);
	if (r == 0 && (option == PR_SET_KEEPCAPS_OP || option == PR_SET_SECUREBITS_OP)) {
		struct prctl_replay p = { option, (long)a2 };
		replay(apply_prctl, &p, sizeof(p),
		       option == PR_SET_KEEPCAPS_OP ? "keep-caps change" : "securebits change");
	}
	return r;
}
