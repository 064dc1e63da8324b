/* Reports what a preloaded library did to this process: threads, the
 * SIGPROF disposition, POSIX timers and files left open.  Sleeps first
 * (argv[1] ms) so an enabled profiler has time to start its threads. */
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static int count_timers(void)
{
	FILE *f = fopen("/proc/self/timers", "r");
	char line[256];
	int n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strncmp(line, "ID:", 3) == 0;
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	usleep((useconds_t)(argc > 1 ? atoi(argv[1]) : 200) * 1000);
	struct sigaction sa;
	sigaction(SIGPROF, NULL, &sa);
	int handlers = 0;
	for (int s = 1; s < 65; s++) {
		struct sigaction o;
		if (s != SIGKILL && s != SIGSTOP && sigaction(s, NULL, &o) == 0 && o.sa_handler != SIG_DFL)
			handlers++;
	}
	/* An interposer's lookups must leave nothing for the program's dlerror(). */
	void *block = malloc(64);
	free(block);
	const char *err = dlerror();
	printf("threads=%d handlers=%d timers=%d fds=%d dlerror=%s\n", count_entries("/proc/self/task"),
	       handlers, count_timers(), count_entries("/proc/self/fd"), err ? "set" : "none");
	return 0;
}
