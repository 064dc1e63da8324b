/* Prints what our DWARF reader says about link-time addresses of a binary,
 * in the layout of `llvm-symbolizer --inlining` (one "name\nfile:line" pair
 * per frame, innermost first, a blank line after each address), so tests
 * can compare the two.  Usage:
 *   dwarf_query [--dirs D1:D2] [--budget BYTES] [--cpu-ppm N] [--spin-ms N] [--stats] BINARY ADDR...
 * Addresses are hex (0x...).  --spin-ms uses N ms of CPU first (a process
 * that has run that long, for the CPU share of --cpu-ppm).  The debug information is found as the library
 * finds it (the binary, then separate debug files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
#include <sys/resource.h>

#include "symbols/debuginfo.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void spin_cpu(double ms)
{
	struct timespec ts;
	volatile unsigned long sink = 0;
	double until;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	until = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 + ms;
	do {
		for (int k = 0; k < 100000; k++)
			sink += (unsigned long)k;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while ((double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6 < until);
}

int main(int argc, char **argv)
{
	double t0 = now_ms();
	const char *dirs = NULL;
	size_t budget = 64u << 20;
	int stats = 0, i = 1;
	double spin_ms = 0;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (strcmp(argv[i], "--dirs") == 0 && i + 1 < argc)
			dirs = argv[++i];
		else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc)
			budget = strtoull(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--stats") == 0)
			stats = 1;
		else if (strcmp(argv[i], "--cpu-ppm") == 0 && i + 1 < argc)
			debuginfo_limit_inflating((uint32_t)strtoul(argv[++i], NULL, 0), 0);
		else if (strcmp(argv[i], "--spin-ms") == 0 && i + 1 < argc)
			spin_ms = atof(argv[++i]);
	}
	if (spin_ms > 0)
		spin_cpu(spin_ms);
	if (i >= argc) {
		fprintf(stderr, "usage: dwarf_query [--dirs D] [--budget N] [--cpu-ppm N] [--spin-ms N] [--stats] BINARY ADDR...\n");
		return 2;
	}
	const char *path = argv[i++];
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return 2;
	}
	void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	struct elf_image img;
	if (p == MAP_FAILED || !elf_open(&img, p, (size_t)st.st_size)) {
		fprintf(stderr, "%s: not ELF\n", path);
		return 2;
	}
	struct debug_ref ref;
	debug_ref_read(&img, &ref);
	uint64_t deferred = 0;
	struct debuginfo *di = debuginfo_open(path, &ref, dirs, budget, &deferred);
	if (deferred != 0) {
		/* Found and verified, its DWARF not loaded (names only). */
		fprintf(stderr, "%s: loading its debug information deferred by the CPU share\n", path);
		if (stats)
			fprintf(stderr, "stats: inflated_bytes %llu deferred %llu\n",
				(unsigned long long)(di ? debuginfo_inflated_bytes(di) : 0),
				(unsigned long long)debuginfo_deferred_lookups());
		debuginfo_free(di);
		return 3;
	}
	if (di == NULL) {
		fprintf(stderr, "%s: no debug information\n", path);
		return 1;
	}
	fprintf(stderr, "debug file: %s\n", debuginfo_path(di));
	double t_index = now_ms() - t0, t_first = 0, t_second = 0;
	int over = 0;
	int first_arg = i;
	/* --stats: every address is looked up twice; the first pass pays for
	 * decoding units (cold), the second finds them cached (warm). */
	for (int pass = 0; pass < (stats ? 2 : 1); pass++) {
		double tp = now_ms();
		for (i = first_arg; i < argc; i++) {
			uint64_t addr = strtoull(argv[i], NULL, 16);
			struct dwarf_frame fr[DWARF_MAX_FRAMES];
			uint32_t n = 0;
			enum dwarf_lookup_status stt = debuginfo_lookup(di, addr, fr, &n);
			if (stt == DWARF_OVER_BUDGET)
				over++;
			if (pass > 0)
				continue;
			if (stt != DWARF_FOUND)
				printf("??\n??:0\n\n");
			for (uint32_t k = 0; k < n && stt == DWARF_FOUND; k++)
				printf("%s\n%s:%u\n", fr[k].name ? fr[k].name : "??", fr[k].file ? fr[k].file : "??",
				       fr[k].line);
			if (stt == DWARF_FOUND)
				printf("\n");
		}
		if (pass == 0)
			t_first = now_ms() - tp;
		else
			t_second = now_ms() - tp;
	}
	if (stats) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr,
			"stats: lookups %d index_ms %.2f first_pass_ms %.2f second_pass_ms %.2f "
			"bytes %zu peak_bytes %zu over_budget %d maxrss_kib %ld inflated_bytes %llu "
			"deferred %llu\n",
			argc - first_arg, t_index, t_first, t_second, debuginfo_bytes(di),
			debuginfo_peak_bytes(di), over, ru.ru_maxrss,
			(unsigned long long)debuginfo_inflated_bytes(di),
			(unsigned long long)debuginfo_deferred_lookups());
	}
	debuginfo_free(di);
	return 0;
}
