/* Load-matrix workload: prints, allocates, starts a thread, exits with a code. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *worker(void *arg)
{
	char *s = malloc(64);
	snprintf(s, 64, "thread %s", (const char *)arg);
	puts(s);
	free(s);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, "ok");
	pthread_join(t, NULL);
	void *p = calloc(1000, 10);
	p = realloc(p, 1 << 20);
	free(p);
	printf("hello %d %s\n", argc, argc > 1 ? argv[1] : "-");
	return argc > 2 ? atoi(argv[2]) : 0;
}
