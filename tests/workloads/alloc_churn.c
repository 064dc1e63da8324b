/* Allocation profiler under thread churn and fork: rounds of short-lived
 * threads allocate blocks; half are freed by the main thread (a free on
 * another thread than the malloc), half stay live to the end.  Meanwhile
 * the process forks twice while threads allocate; each child allocates on
 * a few threads and exits (FORKS times, 0 to 2, default 2).  Prints
 * "truth live <bytes>" and "child <pid>" for each child.
 * Usage: alloc_churn [rounds [forks]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS_PER_ROUND 8
#define BLOCKS 64
#define BLOCK_SIZE 1024

struct job {
	void *blocks[BLOCKS];
};

static void *volatile sink;

static __attribute__((noinline)) void *churn_worker(void *arg)
{
	struct job *j = arg;
	for (int i = 0; i < BLOCKS; i++) {
		j->blocks[i] = malloc(BLOCK_SIZE);
		if (!j->blocks[i])
			abort();
		((volatile char *)j->blocks[i])[0] = 1;
		/* short-lived garbage too */
		void *tmp = malloc(100 + (size_t)i);
		sink = tmp;
		free(tmp);
	}
	return NULL;
}

static __attribute__((noinline)) void *child_worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100000; i++) {
		void *p = malloc(512);
		sink = p;
		free(p);
	}
	return NULL;
}

static pid_t fork_child(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t th[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&th[i], NULL, child_worker, NULL) != 0)
				_exit(3);
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		exit(0); /* normal exit: the child's profiles are flushed */
	}
	return pid;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 250;
	int forks = argc > 2 ? atoi(argv[2]) : 2;
	if (forks < 0 || forks > 2)
		return 2;
	unsigned long long live = 0;
	pid_t children[2];
	int n_children = 0;
	for (int r = 0; r < rounds; r++) {
		struct job *jobs = calloc(THREADS_PER_ROUND, sizeof(*jobs));
		pthread_t th[THREADS_PER_ROUND];
		if (!jobs)
			abort();
		for (int t = 0; t < THREADS_PER_ROUND; t++)
			if (pthread_create(&th[t], NULL, churn_worker, &jobs[t]) != 0)
				abort();
		/* Fork while the round's threads allocate. */
		if ((r == rounds / 3 || r == 2 * rounds / 3) && n_children < forks)
			children[n_children++] = fork_child();
		for (int t = 0; t < THREADS_PER_ROUND; t++)
			pthread_join(th[t], NULL);
		for (int t = 0; t < THREADS_PER_ROUND; t++)
			for (int i = 0; i < BLOCKS; i++) {
				if (i & 1) {
					free(jobs[t].blocks[i]);
				} else {
					live += BLOCK_SIZE;
				}
			}
		/* jobs (the pointer arrays) stay allocated: the kept blocks
		 * remain reachable; their bytes are counted too. */
		live += THREADS_PER_ROUND * sizeof(*jobs);
	}
	int ok = 1;
	for (int i = 0; i < n_children; i++) {
		int status = 0;
		if (waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			ok = 0;
		printf("child %d\n", (int)children[i]);
	}
	printf("truth live %llu\n", live);
	fflush(stdout);
	return ok ? 0 : 1;
}
