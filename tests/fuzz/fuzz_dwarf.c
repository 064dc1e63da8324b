/* Fuzz target: the DWARF reader (unit table, abbreviations, every form, line
 * programs, ranges and range lists, scope trees, name links) on arbitrary
 * section bytes.  Input: nine little-endian u32 section sizes (.debug_info,
 * _abbrev, _line, _str, _line_str, _str_offsets, _addr, _ranges, _rnglists),
 * eight u64 addresses to look up, then the sections' bytes in that order.
 * Each section is copied into its own allocation so ASan sees any overread.
 * A small budget exercises eviction and the over-budget path.  When bit 6 of
 * the first byte is set, .debug_info, .debug_abbrev and .debug_line start
 * zeroed and are filled through dwarf_sections.load (as a compressed debug
 * file's are), the .debug_ranges bytes doubling as .debug_aranges; bit 7
 * makes loads fail after a few. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/dwarf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSEC 9
#define NADDR 8

/* On-demand sections: the real bytes, and the zeroed copies the reader sees. */
struct lazy {
	const uint8_t *real[3];
	uint8_t *seen[3];
	size_t size[3];
	uint32_t loads, fail_after;
};

static bool lazy_load(void *ctx, enum dwarf_section_id which, uint64_t off, uint64_t len)
{
	struct lazy *l = ctx;
	if ((unsigned)which > 2 || off >= l->size[which] || len > l->size[which] - off)
		abort(); /* the reader asks only for bytes inside the section */
	if (l->fail_after && ++l->loads > l->fail_after)
		return false;
	memcpy(l->seen[which] + off, l->real[which] + off, (size_t)len);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t head = NSEC * 4 + NADDR * 8;
	if (size < head)
		return 0;
	uint8_t *copies[NSEC] = {0};
	struct lazy lz = {0};
	size_t sizes[NSEC];
	size_t pos = head;
	for (int i = 0; i < NSEC; i++) {
		uint32_t n;
		memcpy(&n, data + 4 * i, 4);
		if (n > size - pos)
			n = (uint32_t)(size - pos);
		sizes[i] = n;
		copies[i] = malloc(n ? n : 1);
		if (copies[i] == NULL)
			goto out;
		memcpy(copies[i], data + pos, n);
		pos += n;
	}
	struct dwarf_sections s = {
		.info = copies[0], .info_size = sizes[0],
		.abbrev = copies[1], .abbrev_size = sizes[1],
		.line = copies[2], .line_size = sizes[2],
		.str = copies[3], .str_size = sizes[3],
		.line_str = copies[4], .line_str_size = sizes[4],
		.str_offsets = copies[5], .str_offsets_size = sizes[5],
		.addr = copies[6], .addr_size = sizes[6],
		.ranges = copies[7], .ranges_size = sizes[7],
		.rnglists = copies[8], .rnglists_size = sizes[8],
	};
	lz.fail_after = (data[0] & 0x80) ? 1u + data[1] % 8 : 0;
	if (data[0] & 0x40) {
		const uint8_t **sec[3] = {&s.info, &s.abbrev, &s.line};
		for (int i = 0; i < 3; i++) {
			lz.real[i] = copies[i];
			lz.size[i] = sizes[i];
			lz.seen[i] = calloc(1, sizes[i] ? sizes[i] : 1);
			if (lz.seen[i] == NULL)
				goto out;
			*sec[i] = lz.seen[i];
		}
		s.aranges = copies[7];
		s.aranges_size = sizes[7];
		s.load = lazy_load;
		s.load_ctx = &lz;
	}
	size_t budget = 16384 + (size_t)(data[0] & 0x3f) * 4096;
	struct dwarf_index *ix = dwarf_index_new(&s, budget);
	if (ix != NULL) {
		for (int i = 0; i < NADDR; i++) {
			uint64_t addr;
			memcpy(&addr, data + NSEC * 4 + 8 * i, 8);
			struct dwarf_frame fr[DWARF_MAX_FRAMES];
			uint32_t n = 0;
			if (dwarf_decode_pending(ix, addr) > s.info_size)
				abort(); /* a unit lies within .debug_info */
			if (dwarf_lookup(ix, addr, fr, &n) == DWARF_FOUND) {
				for (uint32_t k = 0; k < n; k++) {
					if (fr[k].name != NULL)
						(void)strlen(fr[k].name);
					if (fr[k].file != NULL)
						(void)strlen(fr[k].file);
				}
			}
		}
		if (dwarf_index_bytes(ix) > budget)
			abort(); /* the budget is a hard bound */
		dwarf_index_free(ix);
	}
out:
	for (int i = 0; i < 3; i++)
		free(lz.seen[i]);
	for (int i = 0; i < NSEC; i++)
		free(copies[i]);
	return 0;
}
