/* Hazard: a program changes its capabilities, keep-caps or securebits on
 * its own thread (capset, prctl) and then its uid and gid.  Those are
 * per-thread in Linux while setuid/setgid are process-wide: libc makes
 * every thread (the profiler's too) run the same call and ends the process
 * if one fails where another succeeded.  Single-threaded on purpose: any
 * other thread here would take part in the change just like ours.
 *
 * Usage: hazard_setxid MODE [ID]
 *   euid       setresuid(-1, ID, -1); capset (effective = permitted);
 *              setresgid(ID, ID, ID)
 *   keepcaps   prctl(PR_SET_KEEPCAPS, 1); setresuid(ID, ID, ID); capset;
 *              setresgid(ID, ID, ID)
 *   securebits prctl(PR_SET_SECUREBITS, SECBIT_NO_SETUID_FIXUP);
 *              setresuid(ID, ID, ID); setresgid(ID, ID, ID)
 *   drop       setresgid(ID, ID, ID); setresuid(ID, ID, ID) (no capset)
 *   unpriv     (not root) capset to the same sets; setresuid and setresgid
 *              to the ids it has
 * After each step it prints "STEP: ok" when every thread of the process has
 * the capability sets of the main thread (/proc/self/task/N/status), else
 * "STEP: differs ..."; on stderr how many threads are the profiler's.  Then
 * it burns 0.3 s of CPU so a CPU profile has samples. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};
int capget(struct cap_header *h, struct cap_data *d);
int capset(struct cap_header *h, const struct cap_data *d);

#define CAP_V3 0x20080522u
#define SECBIT_NO_SETUID_FIXUP_BIT (1u << 2)

static int fail(const char *what)
{
	perror(what);
	return 3;
}

/* "CapInh CapPrm CapEff" of a task, empty on error. */
static void caps_of(const char *task, char *out, size_t cap, char *name, size_t name_cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%s/status", task);
	out[0] = name[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[256];
	size_t used = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Name:", 5)) {
			snprintf(name, name_cap, "%.40s", line + 6);
			name[strcspn(name, "\n")] = 0;
		} else if (!strncmp(line, "CapInh:", 7) || !strncmp(line, "CapPrm:", 7) ||
			   !strncmp(line, "CapEff:", 7)) {
			line[strcspn(line, "\n")] = 0;
			used += (size_t)snprintf(out + used, cap - used, "%s ", line + 8);
			if (used >= cap)
				break;
		}
	}
	fclose(f);
}

static void report(const char *step)
{
	char self[32], mine[128], name[64];
	snprintf(self, sizeof(self), "%d", (int)gettid());
	caps_of(self, mine, sizeof(mine), name, sizeof(name));
	DIR *d = opendir("/proc/self/task");
	if (!d) {
		printf("%s: cannot read /proc/self/task\n", step);
		return;
	}
	int ours = 0, differ = 0;
	char first_diff[512] = "";
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, self))
			continue;
		char caps[128];
		caps_of(e->d_name, caps, sizeof(caps), name, sizeof(name));
		if (!caps[0])
			continue; /* gone meanwhile */
		if (!strncmp(name, "stowaway", 8))
			ours++;
		if (strcmp(caps, mine) && differ++ == 0)
			snprintf(first_diff, sizeof(first_diff), "%.64s has %.127s, main %.127s", name, caps, mine);
	}
	closedir(d);
	if (differ)
		printf("%s: differs in %d threads (%s)\n", step, differ, first_diff);
	else
		printf("%s: ok\n", step);
	fflush(stdout);
	fprintf(stderr, "%s: threads of the profiler %d\n", step, ours);
}

/* Raises the effective set to the permitted set, on this thread only. */
static int restore_effective(void)
{
	struct cap_header h = { CAP_V3, 0 };
	struct cap_data d[2];
	if (capget(&h, d) != 0)
		return -1;
	for (int i = 0; i < 2; i++)
		d[i].effective = d[i].permitted;
	return capset(&h, d);
}

static void burn(double seconds)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	volatile uint64_t x = 1;
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

enum step { KEEPCAPS, SECUREBITS, UID_ALL, UID_EFFECTIVE, UID_SAME, CAPSET, GID_ALL, GID_SAME };

static const char *const step_names[] = { "keepcaps", "securebits", "setresuid", "setresuid",
					  "setresuid", "capset", "setresgid", "setresgid" };

static const struct {
	const char *mode;
	enum step steps[4];
	int n;
} modes[] = {
	{ "euid", { UID_EFFECTIVE, CAPSET, GID_ALL }, 3 },
	{ "keepcaps", { KEEPCAPS, UID_ALL, CAPSET, GID_ALL }, 4 },
	{ "securebits", { SECUREBITS, UID_ALL, GID_ALL }, 3 },
	{ "drop", { GID_ALL, UID_ALL }, 2 },
	{ "unpriv", { CAPSET, UID_SAME, GID_SAME }, 3 },
};

static int run_step(enum step s, unsigned id)
{
	switch (s) {
	case KEEPCAPS:
		return prctl(PR_SET_KEEPCAPS, 1L, 0L, 0L, 0L);
	case SECUREBITS:
		return prctl(PR_SET_SECUREBITS, (long)SECBIT_NO_SETUID_FIXUP_BIT, 0L, 0L, 0L);
	case UID_ALL:
		return setresuid(id, id, id);
	case UID_EFFECTIVE:
		return setresuid((uid_t)-1, id, (uid_t)-1);
	case UID_SAME:
		return setresuid(getuid(), getuid(), getuid());
	case CAPSET:
		return restore_effective();
	case GID_ALL:
		return setresgid(id, id, id);
	case GID_SAME:
		return setresgid(getgid(), getgid(), getgid());
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "keepcaps";
	unsigned id = argc > 2 ? (unsigned)atoi(argv[2]) : 65534;
	int m = 0;
	while (m < (int)(sizeof(modes) / sizeof(modes[0])) && strcmp(modes[m].mode, mode))
		m++;
	if (m == (int)(sizeof(modes) / sizeof(modes[0]))) {
		fprintf(stderr, "unknown mode %s\n", mode);
		return 2;
	}
	/* Let the profiler's threads settle first. */
	struct timespec pause = { 0, 100 * 1000 * 1000 };
	nanosleep(&pause, NULL);
	report("start");
	for (int i = 0; i < modes[m].n; i++) {
		const char *name = step_names[modes[m].steps[i]];
		if (run_step(modes[m].steps[i], id) != 0)
			return fail(name);
		report(name);
	}
	printf("uid=%u gid=%u\n", (unsigned)geteuid(), (unsigned)getegid());
	fflush(stdout);
	burn(0.3);
	report("end");
	return 0;
}
