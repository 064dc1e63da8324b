/* Fuzz target: the ELF reader on arbitrary bytes (every query, every symbol). */
#include <stddef.h>
#include <stdint.h>

#include "symbols/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_image img;
	if (!elf_open(&img, data, size))
		return 0;
	char hex[ELF_BUILD_ID_HEX_CAP];
	struct elf_section sec;
	struct elf_segment seg;
	uint64_t lo, hi, bias, off;
	(void)elf_build_id_hex(&img, hex, sizeof(hex));
	(void)elf_load_range(&img, &lo, &hi);
	(void)elf_load_bias(&img, 0x7f0000000000ull, 0x1000, 5, &bias);
	(void)elf_vaddr_to_offset(&img, 0x1000, &off);
	(void)elf_eh_frame(&img, &sec);
	(void)elf_section_by_name(&img, ".text", &sec);
	for (uint32_t i = 0; i < img.phnum; i++)
		(void)elf_segment_at(&img, i, &seg);
	for (uint32_t type = 2; type <= 11; type += 9) {
		struct elf_symbol_iter it;
		struct elf_symbol sym;
		if (!elf_symbols_begin(&img, type, &it))
			continue;
		static const char *const names[] = {"malloc", "_rjem_mallocx", "mi_malloc", "x"};
		volatile int found = elf_strings_find(&img, &it.strtab, names, 4);
		(void)found;
		volatile size_t total = 0;
		while (elf_symbols_next(&it, &sym))
			for (const char *p = sym.name; *p; p++)
				total += (size_t)*p;
	}
	return 0;
}
