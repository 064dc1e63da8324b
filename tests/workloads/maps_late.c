/* Maps code after start without dlopen, as node maps V8's builtins a
 * second time: loads the PT_LOAD segments of a shared object with mmap
 * itself, then burns CPU in one of its functions.  No dlopen, so only the
 * profiler's own notice of unknown code can name it before exit.
 * Usage: maps_late LIBRARY SYMBOL_OFFSET_HEX SECONDS */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int fd = open(argv[1], O_RDONLY);
	Elf64_Ehdr eh;
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || eh.e_phnum > 16)
		return 3;
	Elf64_Phdr ph[16];
	if (pread(fd, ph, sizeof(ph[0]) * eh.e_phnum, (off_t)eh.e_phoff) != (ssize_t)(sizeof(ph[0]) * eh.e_phnum))
		return 4;
	uint64_t span = 0;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > span)
			span = ph[i].p_vaddr + ph[i].p_memsz;
	uint8_t *base = mmap(NULL, span + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		return 5;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		uint64_t page = ph[i].p_vaddr & ~4095ull, off = ph[i].p_offset & ~4095ull;
		uint64_t len = ph[i].p_vaddr + ph[i].p_filesz - page;
		int prot = ((ph[i].p_flags & PF_R) ? PROT_READ : 0) | ((ph[i].p_flags & PF_X) ? PROT_EXEC : 0);
		if (mmap(base + page, len, prot, MAP_PRIVATE | MAP_FIXED, fd, (off_t)off) == MAP_FAILED)
			return 6;
	}
	close(fd);
	unsigned long (*hot)(unsigned long) = (unsigned long (*)(unsigned long))(void *)(base + strtoull(argv[2], NULL, 16));
	double end = now() + atof(argv[3]);
	unsigned long sink = 0;
	while (now() < end)
		sink += hot(100000);
	printf("sink %lu\n", sink);
	return 0;
}
