/* Memory workloads for the memory guard (tests/integration/memguard.py).
 *   memleak leak MIB_PER_S          leak 1 MiB blocks at that rate until killed
 *   memleak hold MIB SECONDS        hold MIB, wait, free, exit 0
 *   memleak saw BASE_MIB PEAKS MS   from BASE, climb to each peak (comma list,
 *                                   MiB) and back to BASE, MS between moves
 * Every block is written so the cgroup charges its pages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB (1024 * 1024)
#define MAX_BLOCKS 4096

static void *blocks[MAX_BLOCKS];
static size_t n_blocks;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0) {
	}
}

__attribute__((noinline)) static void *leak_block(void)
{
	char *p = malloc(MIB);
	if (p)
		memset(p, 0x5a, MIB);
	return p;
}

__attribute__((noinline)) static void *hold_block(void)
{
	char *p = malloc(MIB);
	if (p)
		memset(p, 0x3c, MIB);
	return p;
}

__attribute__((noinline)) static void *saw_block(void)
{
	char *p = malloc(MIB);
	if (p)
		memset(p, 0x71, MIB);
	return p;
}

static void keep(void *p)
{
	if (!p) {
		fprintf(stderr, "memleak: out of memory\n");
		exit(3);
	}
	if (n_blocks < MAX_BLOCKS)
		blocks[n_blocks++] = p;
}

static void shrink_to(size_t n)
{
	while (n_blocks > n)
		free(blocks[--n_blocks]);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "leak") == 0) {
		long rate = atol(argv[2]);
		long pause_us = rate > 0 ? 1000000L / rate : 20000;
		for (;;) {
			keep(leak_block());
			struct timespec ts = { 0, pause_us * 1000L };
			nanosleep(&ts, NULL);
		}
	}
	if (argc >= 4 && strcmp(argv[1], "hold") == 0) {
		long mib = atol(argv[2]), secs = atol(argv[3]);
		for (long i = 0; i < mib; i++)
			keep(hold_block());
		printf("holding %ld MiB\n", mib);
		fflush(stdout);
		sleep_ms(secs * 1000);
		shrink_to(0);
		return 0;
	}
	if (argc >= 5 && strcmp(argv[1], "saw") == 0) {
		size_t base = (size_t)atol(argv[2]);
		long ms = atol(argv[4]);
		for (size_t i = 0; i < base; i++)
			keep(saw_block());
		char *peaks = strdup(argv[3]);
		for (char *tok = strtok(peaks, ","); tok; tok = strtok(NULL, ",")) {
			size_t peak = (size_t)atol(tok);
			while (n_blocks < peak)
				keep(saw_block());
			sleep_ms(ms);
			shrink_to(base);
			sleep_ms(ms);
			printf("peak %zu MiB\n", peak);
			fflush(stdout);
		}
		free(peaks);
		shrink_to(0);
		return 0;
	}
	fprintf(stderr, "usage: memleak leak MIB_PER_S | hold MIB SECONDS | saw BASE PEAKS MS\n");
	return 2;
}
