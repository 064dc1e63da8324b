/* Known-answer workload for the allocation profiler (C, glibc or musl).
 *
 * Each function allocates a known number of bytes in one size class through
 * one entry point of the malloc family; two of them keep their blocks until
 * exit (the known live set).  Prints one line per function:
 *   truth <function> <bytes allocated> <bytes still live at exit>
 * Usage: alloc_known [scale]   (scale 1 = about 2.3 GB allocated) */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static void *volatile sink;
static void **kept;
static size_t n_kept, cap_kept;

static NOINLINE void keep(void *p)
{
	if (n_kept == cap_kept) {
		cap_kept = cap_kept ? 2 * cap_kept : 1024;
		/* The bookkeeping array is itself allocated: made with mmap-sized
		 * growth so its bytes are small against the totals below. */
		kept = realloc(kept, cap_kept * sizeof(*kept));
		if (!kept)
			abort();
	}
	kept[n_kept++] = p;
}

static void touch(void *p)
{
	if (!p)
		abort();
	((volatile char *)p)[0] = 1;
	sink = p;
}

/* 32-byte blocks with malloc, freed at once. */
static NOINLINE unsigned long long small_malloc(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(32);
		touch(p);
		free(p);
	}
	return 32ull * (unsigned long long)n;
}

/* 4 KiB blocks with calloc, freed at once. */
static NOINLINE unsigned long long medium_calloc(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = calloc(4, 1024);
		touch(p);
		free(p);
	}
	return 4096ull * (unsigned long long)n;
}

/* 1 MiB blocks with posix_memalign/aligned_alloc, freed at once. */
static NOINLINE unsigned long long large_aligned(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = NULL;
		if (i & 1)
			p = aligned_alloc(64, 1 << 20);
		else if (posix_memalign(&p, 4096, 1 << 20) != 0)
			abort();
		touch(p);
		free(p);
	}
	return (1ull << 20) * (unsigned long long)n;
}

/* Buffers grown by realloc from 1 KiB to 256 KiB, freed: each realloc
 * counts as an allocation of its new size. */
static NOINLINE unsigned long long grow_realloc(long n)
{
	unsigned long long total = 0;
	for (long i = 0; i < n; i++) {
		void *p = NULL;
		for (size_t size = 1024; size <= 256 * 1024; size *= 2) {
			p = realloc(p, size);
			touch(p);
			total += size;
		}
		free(p);
	}
	return total;
}

/* 1 KiB blocks with malloc, kept to the end. */
static NOINLINE unsigned long long live_small(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(1024);
		touch(p);
		keep(p);
	}
	return 1024ull * (unsigned long long)n;
}

/* 64 KiB blocks with memalign, kept to the end. */
static NOINLINE unsigned long long live_large(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = memalign(256, 64 * 1024);
		touch(p);
		keep(p);
	}
	return 65536ull * (unsigned long long)n;
}

int main(int argc, char **argv)
{
	double scale = argc > 1 ? atof(argv[1]) : 1.0;
	if (!(scale > 0))
		scale = 1.0;
	unsigned long long a = small_malloc((long)(8e6 * scale));    /* 256 MB */
	unsigned long long b = medium_calloc((long)(125e3 * scale)); /* 512 MB */
	unsigned long long c = large_aligned((long)(1000 * scale));  /* 1 GiB */
	unsigned long long d = grow_realloc((long)(800 * scale));    /* 400 MB */
	unsigned long long e = live_small((long)(64e3 * scale));     /* 64 MB live */
	unsigned long long f = live_large((long)(512 * scale));      /* 32 MB live */
	printf("truth small_malloc %llu 0\n", a);
	printf("truth medium_calloc %llu 0\n", b);
	printf("truth large_aligned %llu 0\n", c);
	printf("truth grow_realloc %llu 0\n", d);
	printf("truth live_small %llu %llu\n", e, e);
	printf("truth live_large %llu %llu\n", f, f);
	fflush(stdout);
	return 0;
}
