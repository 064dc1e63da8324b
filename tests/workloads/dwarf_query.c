/* Prints what our DWARF reader says about link-time addresses of a binary,
 * in the layout of `llvm-symbolizer --inlining` (one "name\nfile:line" pair
 * per frame, innermost first, a blank line after each address), so tests
 * can compare the two.  Usage:
 *   dwarf_query [--dirs D1:D2] [--budget BYTES] [--stats] BINARY ADDR...
 * Addresses are hex (0x...).  The debug information is found as the library
 * finds it (the binary, then separate debug files). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "symbols/debuginfo.h"

int main(int argc, char **argv)
{
	const char *dirs = NULL;
	size_t budget = 64u << 20;
	int stats = 0, i = 1;
	for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
		if (strcmp(argv[i], "--dirs") == 0 && i + 1 < argc)
			dirs = argv[++i];
		else if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc)
			budget = strtoull(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--stats") == 0)
			stats = 1;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: dwarf_query [--dirs D] [--budget N] [--stats] BINARY ADDR...\n");
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
	struct debuginfo *di = debuginfo_open(path, &ref, dirs, budget);
	if (di == NULL) {
		fprintf(stderr, "%s: no debug information\n", path);
		return 1;
	}
	fprintf(stderr, "debug file: %s\n", debuginfo_path(di));
	int over = 0;
	for (; i < argc; i++) {
		uint64_t addr = strtoull(argv[i], NULL, 16);
		struct dwarf_frame fr[DWARF_MAX_FRAMES];
		uint32_t n = 0;
		enum dwarf_lookup_status stt = debuginfo_lookup(di, addr, fr, &n);
		if (stt == DWARF_OVER_BUDGET)
			over++;
		if (stt != DWARF_FOUND)
			printf("??\n??:0\n\n");
		for (uint32_t k = 0; k < n && stt == DWARF_FOUND; k++)
			printf("%s\n%s:%u\n", fr[k].name ? fr[k].name : "??", fr[k].file ? fr[k].file : "??",
			       fr[k].line);
		if (stt == DWARF_FOUND)
			printf("\n");
	}
	if (stats)
		fprintf(stderr, "index bytes %zu peak %zu over_budget %d\n", debuginfo_bytes(di),
			debuginfo_peak_bytes(di), over);
	debuginfo_free(di);
	return 0;
}
