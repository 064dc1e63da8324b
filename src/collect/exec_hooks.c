/* exec interposition: execve, execv, execvp, execvpe, fexecve, posix_spawn
 * and posix_spawnp.  Exported; only in the .so.
 *
 * - Before an exec replaces the image, the calling thread's CPU timer is
 *   disarmed: a timer signal generated while the kernel is still loading the
 *   new image would be delivered to it with the default action (death).  A
 *   signal already pending is delivered to our handler on the way back from
 *   the disarming call, before the exec starts.  If the exec fails the timer
 *   is re-armed as it was.
 * - STOWAWAY_FOLLOW_EXEC=false (profiling enabled): at start the process's
 *   own LD_PRELOAD loses the entry naming this library, in place (other
 *   entries stay; a variable left empty is removed from environ), so every
 *   exec that passes environ on drops us, including the ones libc makes
 *   internally (execl, execle, execlp, system, popen), which no interposer
 *   sees.  An environment the program builds itself gets the same filtering
 *   in the interposed calls below: the executed program receives a copy,
 *   built in our memory, without us.  Default: the environment is passed
 *   through as given.
 *
 * In a vfork child that execs with FOLLOW_EXEC=false and an environment of
 * its own naming us, the environment copy (in memory shared with the
 * parent) is not freed.
 */
#include "collect/collect.h"
#include "collect/threads.h"
#include "config/config.h"
#include "profile/family.h"
#include "rt/hooks.h"
#include "rt/host.h"
#include "rt/rt.h"
#include "rt/sys.h"
#include "symbols/maps.h"

#include <linux/stat.h>

#define ENV_MAX_ENTRIES (1u << 20)
#define PRELOAD_ENTRY_MAX 4096
#define AT_FDCWD_VALUE (-100)

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*spawn_fn)(int *, const char *, const void *, const void *, char *const[],
			char *const[]);

#define NEXT(type, var, name)                                                  \
	static _Atomic(void *) cache_##name;                                   \
	type var = NULL;                                                       \
	do {                                                                   \
		void *sym_ = hook_next_cached(&cache_##name, #name);           \
		HOOK_FN(var, sym_);                                            \
	} while (0)

/* ---- the calling thread's CPU timer ---- */

struct timer_pause {
	int timer;
	struct sys_itimerspec old;
};

static void timer_pause(struct timer_pause *p)
{
	p->timer = -1;
	family_before_exec();
	if (!collect_threads_active())
		return;
	int slot = threads_find((int)sys_gettid());
	if (slot < 0)
		return;
	int timer = atomic_load(&thread_slots[slot].timer_id);
	if (timer < 0)
		return;
	struct sys_itimerspec off;
	rt_memset(&off, 0, sizeof(off));
	if (sys_timer_settime(timer, 0, &off, &p->old) == 0)
		p->timer = timer;
}

/* After a failed exec: the timer runs again with the setting it had (if it
 * is still the thread's: profiling may have stopped meanwhile). */
static void timer_resume(const struct timer_pause *p)
{
	if (p->timer < 0 || !collect_threads_active())
		return;
	int slot = threads_find((int)sys_gettid());
	if (slot >= 0 && atomic_load(&thread_slots[slot].timer_id) == p->timer)
		(void)sys_timer_settime(p->timer, 0, &p->old, NULL);
}

/* ---- which LD_PRELOAD entries are this library ---- */

static struct {
	atomic_int state; /* 0 unknown, 1 known, -1 not found */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
} self_file;

/* Finds the file mapping that contains our own code in /proc/self/maps. */
static void find_self_file(void)
{
	if (atomic_load(&self_file.state) != 0)
		return;
	uint64_t here = (uint64_t)(uintptr_t)&find_self_file;
	struct rt_buf text = { 0 };
	int found = -1;
	if (maps_read_self(&text)) {
		size_t pos = 0;
		struct maps_entry e;
		while (found < 0 && maps_next((const char *)text.data, text.len, &pos, &e)) {
			if (here >= e.start && here < e.end && e.inode != 0) {
				self_file.dev_major = e.dev_major;
				self_file.dev_minor = e.dev_minor;
				self_file.inode = e.inode;
				found = 1;
			}
		}
	}
	rt_buf_free(&text);
	atomic_store(&self_file.state, found);
}

/* True if the LD_PRELOAD entry [s, s+len) names the file we were loaded from. */
static bool entry_is_self(const char *s, size_t len)
{
	if (len == 0 || len >= PRELOAD_ENTRY_MAX || atomic_load(&self_file.state) != 1)
		return false;
	char path[PRELOAD_ENTRY_MAX];
	rt_memcpy(path, s, len);
	path[len] = 0;
	struct statx st;
	rt_memset(&st, 0, sizeof(st));
	if (rt_statx(AT_FDCWD_VALUE, path, 0, STATX_INO, &st) < 0)
		return false;
	return st.stx_ino == self_file.inode && st.stx_dev_major == self_file.dev_major &&
	       st.stx_dev_minor == self_file.dev_minor;
}

static const char preload_name[] = "LD_PRELOAD=";
#define PRELOAD_NAME_LEN (sizeof(preload_name) - 1)

/* Writes "LD_PRELOAD=" plus the entries of `value` that are not us into out
 * (cap >= strlen(value) + PRELOAD_NAME_LEN + 1).  Returns the number of
 * entries that named us; *left tells whether any entry is left (else the
 * variable is to be dropped). */
static unsigned filter_preload(const char *value, char *out, bool *left)
{
	rt_memcpy(out, preload_name, PRELOAD_NAME_LEN);
	return config_filter_preload(value, out + PRELOAD_NAME_LEN, entry_is_self, left);
}

/* The process's environment now (environ is a weak reference). */
static char *const *current_environ(void) { return &environ != NULL ? environ : NULL; }

static bool strip_wanted(void) { return sw_cfg.enabled && !sw_cfg.follow_exec; }

/* Index of the first LD_PRELOAD entry of env, and its length in *n;
 * ENV_MAX_ENTRIES when there is none (or env is unreasonably long). */
static size_t find_preload(char *const env[], size_t *n)
{
	size_t i = 0, at = ENV_MAX_ENTRIES;
	for (; i < ENV_MAX_ENTRIES && env[i]; i++)
		if (at == ENV_MAX_ENTRIES && rt_strncmp(env[i], preload_name, PRELOAD_NAME_LEN) == 0)
			at = i;
	*n = i;
	return i == ENV_MAX_ENTRIES ? ENV_MAX_ENTRIES : at;
}

void exec_strip_own_preload(void)
{
	char **env = (char **)current_environ();
	size_t n = 0;
	size_t at = env && strip_wanted() ? find_preload(env, &n) : ENV_MAX_ENTRIES;
	if (at == ENV_MAX_ENTRIES)
		return;
	find_self_file();
	size_t len = rt_strlen(env[at]);
	char *filtered = rt_malloc(len + 1);
	if (!filtered) {
		rt_error("STOWAWAY_FOLLOW_EXEC=false: no memory to edit LD_PRELOAD; "
			 "programs executed through libc-internal calls may be profiled");
		return;
	}
	bool left;
	if (filter_preload(env[at] + PRELOAD_NAME_LEN, filtered, &left) > 0) {
		if (left) {
			rt_memcpy(env[at], filtered, rt_strlen(filtered) + 1);
		} else {
			/* As unsetenv does: the later entries move down one place. */
			for (size_t i = at; i < n; i++)
				env[i] = env[i + 1];
		}
	}
	rt_free(filtered);
}

/* The environment to pass on: envp itself, or a filtered copy in one block
 * the caller frees (*copy) if the exec returns.  envp NULL passes through. */
static char *const *env_for_exec(char *const envp[], void **copy)
{
	*copy = NULL;
	size_t n = 0;
	size_t preload_at = envp && strip_wanted() ? find_preload(envp, &n) : ENV_MAX_ENTRIES;
	if (preload_at == ENV_MAX_ENTRIES)
		return envp;
	find_self_file();
	size_t value_len = rt_strlen(envp[preload_at]);
	size_t ptr_bytes = (n + 1) * sizeof(char *);
	char **out = rt_malloc(ptr_bytes + value_len + 1);
	if (!out)
		return envp;
	char *preload = (char *)out + ptr_bytes;
	bool keep;
	if (filter_preload(envp[preload_at] + PRELOAD_NAME_LEN, preload, &keep) == 0) {
		/* Nothing of ours in it (the usual case once our own was stripped). */
		rt_free(out);
		return envp;
	}
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (i != preload_at)
			out[o++] = envp[i];
		else if (keep)
			out[o++] = preload;
	}
	out[o] = NULL;
	*copy = out;
	return out;
}

/* ---- the interposed functions ---- */

SW_EXPORT int execve(const char *path, char *const argv[], char *const envp[]);
SW_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	NEXT(execve_fn, next, execve);
	if (!next)
		return -1;
	void *copy;
	char *const *env = env_for_exec(envp, &copy);
	struct timer_pause tp;
	timer_pause(&tp);
	int r = next(path, argv, env);
	timer_resume(&tp);
	rt_free(copy);
	return r;
}

SW_EXPORT int execv(const char *path, char *const argv[]);
SW_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, current_environ());
}

SW_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]);
SW_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	NEXT(execvpe_fn, next, execvpe);
	if (!next)
		return -1;
	void *copy;
	char *const *env = env_for_exec(envp, &copy);
	struct timer_pause tp;
	timer_pause(&tp);
	int r = next(file, argv, env);
	timer_resume(&tp);
	rt_free(copy);
	return r;
}

SW_EXPORT int execvp(const char *file, char *const argv[]);
SW_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, current_environ());
}

SW_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]);
SW_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	NEXT(fexecve_fn, next, fexecve);
	if (!next)
		return -1;
	void *copy;
	char *const *env = env_for_exec(envp, &copy);
	struct timer_pause tp;
	timer_pause(&tp);
	int r = next(fd, argv, env);
	timer_resume(&tp);
	rt_free(copy);
	return r;
}

/* posix_spawn: the child is a new process (no timer of ours, no pending
 * signal); only the environment matters.  The attribute and file-action
 * objects are passed through untouched. */
SW_EXPORT int posix_spawn(int *pid, const char *path, const void *actions, const void *attr,
			  char *const argv[], char *const envp[]);
SW_EXPORT int posix_spawn(int *pid, const char *path, const void *actions, const void *attr,
			  char *const argv[], char *const envp[])
{
	NEXT(spawn_fn, next, posix_spawn);
	if (!next)
		return ENOSYS;
	void *copy;
	char *const *env = env_for_exec(envp, &copy);
	int r = next(pid, path, actions, attr, argv, env);
	rt_free(copy);
	return r;
}

SW_EXPORT int posix_spawnp(int *pid, const char *file, const void *actions, const void *attr,
			   char *const argv[], char *const envp[]);
SW_EXPORT int posix_spawnp(int *pid, const char *file, const void *actions, const void *attr,
			   char *const argv[], char *const envp[])
{
	NEXT(spawn_fn, next, posix_spawnp);
	if (!next)
		return ENOSYS;
	void *copy;
	char *const *env = env_for_exec(envp, &copy);
	int r = next(pid, file, actions, attr, argv, env);
	rt_free(copy);
	return r;
}
