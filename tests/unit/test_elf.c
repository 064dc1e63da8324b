/* ELF reader, maps parser and symbol registry: checked against readelf and
 * against corrupted inputs. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/time_types.h>

#include "rt/rt.h"
#include "symbols/elf.h"
#include "symbols/functions.h"
#include "symbols/maps.h"
#include "symbols/symbols.h"
#include "unit/check.h"
#include "unwind/cfi.h"

static uint8_t *read_whole(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)len);
	*n = fread(buf, 1, (size_t)len, f);
	fclose(f);
	return buf;
}

/* The build id readelf prints for path, or "". */
static void readelf_build_id(const char *path, char *out, size_t cap)
{
	char cmd[512], line[512];
	out[0] = 0;
	char real[256];
	ssize_t len = readlink(path, real, sizeof(real) - 1);
	if (len <= 0)
		snprintf(real, sizeof(real), "%s", path);
	else
		real[len] = 0;
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", real);
	FILE *p = popen(cmd, "r");
	if (p == NULL)
		return;
	while (fgets(line, sizeof(line), p)) {
		char *at = strstr(line, "Build ID: ");
		if (at != NULL) {
			snprintf(out, cap, "%s", at + 10);
			out[strcspn(out, "\n")] = 0;
		}
	}
	pclose(p);
}

static void test_own_executable(void)
{
	size_t n;
	uint8_t *buf = read_whole("/proc/self/exe", &n);
	struct elf_image img;
	char hex[ELF_BUILD_ID_HEX_CAP], want[256];
	CHECK(buf != NULL && elf_open(&img, buf, n));
	CHECK(elf_build_id_hex(&img, hex, sizeof(hex)));
	readelf_build_id("/proc/self/exe", want, sizeof(want));
	CHECK(want[0] != 0 && strcmp(hex, want) == 0);

	struct elf_symbol_iter it;
	struct elf_symbol sym;
	int found_main = 0;
	CHECK(elf_symbols_begin(&img, 2 /* SHT_SYMTAB */, &it));
	while (elf_symbols_next(&it, &sym))
		if (strcmp(sym.name, "test_own_executable") == 0)
			found_main = sym.size > 0;
	CHECK(found_main);

	/* Whole strings only: a prefix or a suffix of a name is not found; the
	 * first name of the list found in the table wins, whatever its index. */
	static const char *const names[] = {"test_own_exec", "no_such_name_here", "own_executable",
					    "test_own_executable", "main"};
	CHECK(elf_strings_find(&img, &it.strtab, names, 5) == 3 ||
	      elf_strings_find(&img, &it.strtab, names, 5) == 4);
	CHECK(elf_strings_find(&img, &it.strtab, names, 3) == -1);
	CHECK(elf_strings_find(&img, &it.strtab, names + 4, 1) == 0);
	struct elf_section cut = it.strtab;
	cut.size = img.size; /* past the end of the image */
	CHECK(elf_strings_find(&img, &cut, names, 5) == -1);

	struct elf_section eh;
	uint64_t lo, hi;
	CHECK(elf_eh_frame(&img, &eh) && eh.size > 0);
	CHECK(elf_load_range(&img, &lo, &hi) && hi > lo);
	struct cfi_table *t = cfi_table_build(buf + eh.offset, eh.size, eh.addr, lo, hi - lo);
	CHECK(t != NULL && t->nrows > 10);
	cfi_table_free(t);
	free(buf);
}

static void test_vdso_in_memory(void)
{
	const uint8_t *vdso = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	struct elf_image img;
	struct elf_section eh;
	struct elf_symbol_iter it;
	struct elf_symbol sym;
	int found = 0;
	CHECK(vdso != NULL && elf_open(&img, vdso, 8192));
	CHECK(elf_eh_frame(&img, &eh) && eh.size > 0);
	CHECK(elf_symbols_begin(&img, 11 /* SHT_DYNSYM */, &it));
	while (elf_symbols_next(&it, &sym))
		found |= strstr(sym.name, "clock_gettime") != NULL;
	CHECK(found);
}

/* Mutated and truncated copies of a real ELF file must never make the reader
 * or the .eh_frame parser read outside the buffer (run under ASan). */
static void test_corrupted_images(void)
{
	size_t n;
	uint8_t *orig = read_whole("/proc/self/exe", &n);
	uint8_t *copy = malloc(n);
	unsigned seed = 12345;
	CHECK(orig != NULL && copy != NULL);
	for (int round = 0; round < 300 && orig && copy; round++) {
		size_t len = round % 3 == 0 ? (size_t)rand_r(&seed) % n : n;
		uint8_t *img_bytes = malloc(len ? len : 1);
		memcpy(img_bytes, orig, len);
		for (int k = 0; k < 20 && len > 0; k++) {
			size_t at = (size_t)rand_r(&seed) % (len < 4096 || k % 2 ? len : 4096);
			img_bytes[at] = (uint8_t)rand_r(&seed);
		}
		struct elf_image img;
		char hex[ELF_BUILD_ID_HEX_CAP];
		struct elf_section eh;
		uint64_t lo, hi, bias, off;
		if (elf_open(&img, img_bytes, len)) {
			(void)elf_build_id_hex(&img, hex, sizeof(hex));
			(void)elf_load_bias(&img, 0x400000, 0x1000, 5, &bias);
			(void)elf_vaddr_to_offset(&img, 0x1000, &off);
			struct elf_symbol_iter it;
			struct elf_symbol sym;
			if (elf_symbols_begin(&img, 2, &it))
				while (elf_symbols_next(&it, &sym))
					CHECK(sym.name >= (const char *)img_bytes &&
					      sym.name < (const char *)img_bytes + len);
			if (elf_eh_frame(&img, &eh) && elf_load_range(&img, &lo, &hi) && hi > lo &&
			    hi - lo < (1ull << 32)) {
				struct cfi_table *t =
					cfi_table_build(img_bytes + eh.offset, eh.size, eh.addr, lo, hi - lo);
				if (t != NULL)
					(void)cfi_table_lookup(t, lo + 0x1000);
				cfi_table_free(t);
			}
		}
		free(img_bytes);
	}
	free(orig);
	free(copy);
}

static void test_maps_lines(void)
{
	struct maps_entry e;
	const char *l1 = "7f1234560000-7f1234580000 r-xp 00002000 fd:01 123456   /usr/lib/libc.so.6";
	CHECK(maps_parse_line(l1, strlen(l1), &e));
	CHECK_EQ_U64(e.start, 0x7f1234560000ull);
	CHECK_EQ_U64(e.end, 0x7f1234580000ull);
	CHECK_EQ_U64(e.offset, 0x2000);
	CHECK_EQ_U64(e.dev_major, 0xfd);
	CHECK_EQ_U64(e.inode, 123456);
	CHECK(e.perms == (MAPS_PERM_READ | MAPS_PERM_EXEC));
	CHECK(e.path_len == strlen("/usr/lib/libc.so.6") && memcmp(e.path, "/usr/lib/libc.so.6", e.path_len) == 0);
	const char *l2 = "7ffd0000-7ffd2000 rw-p 00000000 00:00 0 ";
	CHECK(maps_parse_line(l2, strlen(l2), &e) && e.path_len == 0 && e.perms == 3);
	const char *l3 = "7ffd0000-7ffd2000 rw-s 00000000 00:05 77 /dev/shm/x (deleted)";
	CHECK(maps_parse_line(l3, strlen(l3), &e) && (e.perms & MAPS_PERM_SHARED) && e.path_len == 20);
	const char *bad[] = {"", "zz-10 r-xp 0 0:0 0", "2000-1000 r-xp 00000000 00:00 0",
			     "1000-2000 r-xp", "1000-2000 r-xp 0 00:00", "1000-2000 r-xp 0 0000 0",
			     "10000000000000000-2 r-xp 0 00:00 0"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!maps_parse_line(bad[i], strlen(bad[i]), &e));
	const char *text = "1000-2000 r-xp 0 00:00 0 a\ngarbage\n3000-4000 rw-p 0 00:00 0 b";
	size_t pos = 0;
	int count = 0;
	while (maps_next(text, strlen(text), &pos, &e))
		count++;
	CHECK(count == 2);
}

/* Lines of /proc/self/maps as read through libc's stdio. */
static size_t maps_lines_by_stdio(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	size_t n = 0;
	int c;
	if (f == NULL)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* maps_read_self reads the whole file whether it is a few lines (one
 * chunk, no growing) or far more than a chunk (1500 mappings that cannot
 * merge: alternate pages of one region made read-only). */
static void test_maps_read_self(void)
{
	for (int big = 0; big < 2; big++) {
		size_t pages = 3000;
		uint8_t *region = NULL;
		if (big) {
			region = mmap(NULL, pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			CHECK(region != MAP_FAILED);
			for (size_t i = 0; region != MAP_FAILED && i < pages; i += 2)
				CHECK(mprotect(region + i * 4096, 4096, PROT_READ) == 0);
		}
		struct rt_buf text = {0};
		CHECK(maps_read_self(&text));
		size_t want = maps_lines_by_stdio();
		size_t pos = 0, parsed = 0, newlines = 0;
		struct maps_entry e;
		while (maps_next((const char *)text.data, text.len, &pos, &e))
			parsed++;
		for (size_t i = 0; i < text.len; i++)
			newlines += text.data[i] == '\n';
		/* stdio's own buffer may add or merge a mapping or two between reads */
		CHECK(newlines + 4 >= want && newlines <= want + 4);
		CHECK(parsed == newlines && text.len > 0 && text.data[text.len - 1] == '\n');
		CHECK(!big || text.len > 65536);
		rt_buf_free(&text);
		if (region != NULL && region != MAP_FAILED)
			munmap(region, pages * 4096);
	}
}

int main(void);

__attribute__((noinline)) static int resolve_target(int x) { return x * 3 + 1; }

static void test_registry_resolve(void)
{
	struct sw_frame_info fi;
	char want[256];
	CHECK(symbols_refresh());
	memset(&fi, 0, sizeof(fi));
	uint64_t pc = (uint64_t)(uintptr_t)resolve_target + 1;
	CHECK(symbols_resolve(NULL, pc, &fi));
	CHECK(fi.function != NULL && strcmp(fi.function, "resolve_target") == 0);
	CHECK(fi.map_start <= pc && pc < fi.map_limit && strstr(fi.map_path, "test_elf") != NULL);
	readelf_build_id("/proc/self/exe", want, sizeof(want));
	CHECK(strcmp(fi.build_id, want) == 0);
	/* A libc function (one sanitizers do not intercept) through .dynsym. */
	memset(&fi, 0, sizeof(fi));
	CHECK(symbols_resolve(NULL, (uint64_t)(uintptr_t)getauxval, &fi));
	CHECK(fi.function != NULL && strstr(fi.function, "getauxval") != NULL);
	CHECK(strstr(fi.map_path, "libc") != NULL && fi.build_id[0] != 0);
	/* The vDSO, symbolized from memory. */
	memset(&fi, 0, sizeof(fi));
	uint64_t vdso = (uint64_t)getauxval(AT_SYSINFO_EHDR);
	CHECK(symbols_resolve(NULL, vdso + 16, &fi) && strcmp(fi.map_path, "[vdso]") == 0);
	/* Unknown memory: nothing, and no name. */
	memset(&fi, 0, sizeof(fi));
	CHECK(!symbols_resolve(NULL, 0x1000, &fi) && fi.function == NULL);
	struct symbols_stats st;
	symbols_stats(&st);
	/* Symbols only of the files a pc was resolved in (this program, libc,
	 * the vDSO's own); unwind rules of every module read in place. */
	CHECK(st.modules >= 3 && st.functions > 100 && st.modules_named >= 2 &&
	      st.modules_named < st.modules && st.unwind_in_place >= 3 && st.unwind_bytes == 0);
	symbols_collect_garbage();
}

/* The periodic refresh backs off while no code is mapped or unmapped: a
 * refresh that finds only other memory changed (a heap's) leaves the code
 * change count as it was; mapping a file's page executable moves it, and so
 * does unmapping it. */
static void test_code_changes(void)
{
	CHECK(symbols_refresh());
	uint64_t before = symbols_code_changes();
	void *anon = mmap(NULL, 3 * 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED);
	char line[64];
	snprintf(line, sizeof(line), "%lx-", (unsigned long)(uintptr_t)anon);
	struct rt_buf text = {0};
	CHECK(maps_read_self(&text) && text.len > 0);
	CHECK(memmem(text.data, text.len, line, strlen(line)) != NULL); /* the maps did change */
	rt_buf_free(&text);
	CHECK(symbols_refresh());
	CHECK(symbols_code_changes() == before);
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	CHECK(code != MAP_FAILED);
	close(fd);
	CHECK(symbols_refresh());
	CHECK(symbols_code_changes() == before + 1);
	CHECK(munmap(code, 4096) == 0);
	CHECK(symbols_refresh());
	CHECK(symbols_code_changes() == before + 2);
	CHECK(munmap(anon, 3 * 4096) == 0);
	CHECK(symbols_refresh());
	CHECK(symbols_code_changes() == before + 2);
	symbols_collect_garbage();
}

/* A pc past the end of its nearest symbol is not that symbol: the bytes
 * between the end of the last function of .text and the next mapping page. */
static void test_no_wrong_name_past_symbol_end(void)
{
	size_t n;
	uint8_t *buf = read_whole("/proc/self/exe", &n);
	struct elf_image img;
	struct elf_symbol_iter it;
	struct elf_symbol sym, last = {0, 0, NULL, 0, false, 0, 0};
	CHECK(buf != NULL && elf_open(&img, buf, n) && elf_symbols_begin(&img, 2, &it));
	uint64_t main_value = 0;
	while (elf_symbols_next(&it, &sym)) {
		if (sym.value > last.value && sym.size > 0)
			last = sym;
		if (strcmp(sym.name, "main") == 0)
			main_value = sym.value;
	}
	uint64_t bias = (uint64_t)(uintptr_t)main - main_value;
	struct sw_frame_info fi;
	memset(&fi, 0, sizeof(fi));
	uint64_t past = last.value + last.size + bias;
	if (symbols_resolve(NULL, past, &fi))
		CHECK(fi.function == NULL || strcmp(fi.function, last.name) != 0);
	memset(&fi, 0, sizeof(fi));
	CHECK(symbols_resolve(NULL, past - 1, &fi) && fi.function && strcmp(fi.function, last.name) == 0);
	free(buf);
}

static int wrong_clock(int clockid, struct __kernel_timespec *ts)
{
	(void)clockid;
	ts->tv_sec = 1;
	ts->tv_nsec = 0;
	return 0;
}

/* The registry hands the vDSO's clock_gettime to rt; a function that
 * disagrees with the kernel is refused. */
static void test_vdso_clock(void)
{
	CHECK(!rt_clock_use_vdso((uintptr_t)wrong_clock));
	CHECK(strcmp(rt_clock_source(), "system calls") == 0);
	CHECK(symbols_refresh());
	if (getauxval(AT_SYSINFO_EHDR) == 0) {
		printf("SKIP test_vdso_clock: no vDSO in this process\n");
		return;
	}
	CHECK(strcmp(rt_clock_source(), "the vDSO") == 0);
	bool ordered = true;
	for (int i = 0; i < 1000 && ordered; i++) {
		struct timespec a, c;
		clock_gettime(CLOCK_MONOTONIC, &a);
		uint64_t b = rt_monotonic_ns();
		clock_gettime(CLOCK_MONOTONIC, &c);
		uint64_t lo = (uint64_t)a.tv_sec * 1000000000ull + (uint64_t)a.tv_nsec;
		uint64_t hi = (uint64_t)c.tv_sec * 1000000000ull + (uint64_t)c.tv_nsec;
		ordered = lo <= b && b <= hi;
	}
	CHECK(ordered);
	struct timespec r;
	clock_gettime(CLOCK_REALTIME, &r);
	uint64_t ours = rt_realtime_ns(), libc = (uint64_t)r.tv_sec * 1000000000ull + (uint64_t)r.tv_nsec;
	CHECK(ours >= libc && ours - libc < 1000000000ull);
}

/* Load bias as the loader computes it, for the layouts linkers produce. */
static void test_load_bias_layouts(void)
{
	uint64_t bias = 0;
	/* lld: the text segment starts on the read-only segment's file page,
	 * p_vaddr - p_offset differs per segment. */
	const struct elf_load_segment lld[] = {
		{0x0, 0x0, 0x60c, PF_R},
		{0x610, 0x1610, 0x140, PF_R | PF_X},
		{0x750, 0x2750, 0x1e8, PF_R | PF_W},
		{0x938, 0x3938, 0x30, PF_R | PF_W},
	};
	uint64_t base = 0x555555554000ull;
	CHECK(elf_bias_of_mapping(lld, 4, base, 0, PF_R, &bias));
	CHECK_EQ_U64(bias, base);
	CHECK(elf_bias_of_mapping(lld, 4, base + 0x1000, 0, PF_R | PF_X, &bias));
	CHECK_EQ_U64(bias, base);
	/* Its data mappings (both RW segments on file page 0) cannot be told
	 * apart from one mapping alone: the registry places modules by their
	 * executable mapping. */
	/* lld -no-pie: bias 0 at the link address. */
	const struct elf_load_segment nopie[] = {
		{0x0, 0x200000, 0x53c, PF_R},
		{0x540, 0x201540, 0x115, PF_R | PF_X},
	};
	CHECK(elf_bias_of_mapping(nopie, 2, 0x201000, 0, PF_R | PF_X, &bias));
	CHECK_EQ_U64(bias, 0);
	/* GNU ld -z separate-code: offsets and addresses page-aligned alike. */
	const struct elf_load_segment gnu[] = {
		{0x0, 0x0, 0x628, PF_R},
		{0x1000, 0x1000, 0x1b5, PF_R | PF_X},
		{0x2000, 0x2000, 0x104, PF_R},
		{0x2de8, 0x3de8, 0x248, PF_R | PF_W},
	};
	CHECK(elf_bias_of_mapping(gnu, 4, base + 0x1000, 0x1000, PF_R | PF_X, &bias));
	CHECK_EQ_U64(bias, base);
	CHECK(elf_bias_of_mapping(gnu, 4, base + 0x3000, 0x2000, PF_R | PF_W, &bias));
	CHECK_EQ_U64(bias, base);
	/* 2 MiB-aligned segments (huge pages): mapped from the 4 KiB page. */
	const struct elf_load_segment huge[] = {
		{0x0, 0x0, 0x1000, PF_R},
		{0x200000, 0x200000, 0x5000, PF_R | PF_X},
	};
	CHECK(elf_bias_of_mapping(huge, 2, 0x7f0000200000ull, 0x200000, PF_R | PF_X, &bias));
	CHECK_EQ_U64(bias, 0x7f0000000000ull);
	/* A text mapping split by mprotect: its second part starts inside. */
	CHECK(elf_bias_of_mapping(lld, 4, base + 0x1000, 0, PF_R | PF_X, &bias));
	CHECK(elf_bias_of_mapping(gnu, 4, base + 0x1000 + 0x1000, 0x2000, PF_R | PF_X, &bias) == false ||
	      bias == base);
	/* No segment there. */
	CHECK(!elf_bias_of_mapping(gnu, 4, base, 0x100000, PF_R | PF_X, &bias));
}

/* glibc exports free, __libc_free and cfree@GLIBC_2.2.5 at one address:
 * the name resolved is free. */
static void test_alias_preference(void)
{
	CHECK(symbols_refresh());
	struct sw_frame_info fi;
	void *volatile fp = (void *)free;
	uint64_t pc = (uint64_t)(uintptr_t)fp;
	CHECK(symbols_resolve(NULL, pc, &fi));
	/* Under ASan, free is the sanitizer's interceptor, not glibc's. */
	if (fi.map_path == NULL || strstr(fi.map_path, "/libc.so") == NULL) {
		printf("SKIP test_alias_preference: free is not glibc's here (%s)\n", fi.map_path);
		return;
	}
	CHECK(fi.function != NULL && strcmp(fi.function, "free") == 0);
	fp = (void *)malloc;
	CHECK(symbols_resolve(NULL, (uint64_t)(uintptr_t)fp, &fi));
	CHECK(fi.function != NULL && strcmp(fi.function, "malloc") == 0);
}

/* The rules every source of names shares (symbol tables of modules and
 * debug files, DWARF): no __GI_ prefix; global over local, the default
 * version over an old one, fewer underscores, then the shorter name. */
static void test_function_naming_rules(void)
{
	CHECK(strcmp(function_display_name("__GI___clone3"), "__clone3") == 0);
	CHECK(strcmp(function_display_name("__GI_free"), "free") == 0);
	CHECK(strcmp(function_display_name("__GI_"), "__GI_") == 0);
	CHECK(strcmp(function_display_name("clone3"), "clone3") == 0);
	CHECK(function_display_name(NULL) == NULL);
	struct elf_symbol global = {.bind = STB_GLOBAL}, local = {.bind = STB_LOCAL};
	struct elf_symbol old = {.bind = STB_GLOBAL, .hidden_version = true};
	CHECK(function_alias_preference(&global, "__clone3") > function_alias_preference(&local, "clone3"));
	CHECK(function_alias_preference(&local, "clone3") > function_alias_preference(&local, "__clone3"));
	CHECK(function_alias_preference(&global, "free") > function_alias_preference(&old, "cfree"));
	CHECK(function_alias_preference(&global, "free") > function_alias_preference(&global, "__libc_free"));
	CHECK(function_alias_preference(&global, "free") > function_alias_preference(&global, "freeX"));
}

int main(void)
{
	RUN(test_vdso_clock); /* first: before any refresh installs the vDSO clock */
	RUN(test_load_bias_layouts);
	RUN(test_alias_preference);
	RUN(test_function_naming_rules);
	RUN(test_own_executable);
	RUN(test_vdso_in_memory);
	RUN(test_corrupted_images);
	RUN(test_maps_lines);
	RUN(test_maps_read_self);
	RUN(test_registry_resolve);
	RUN(test_code_changes);
	RUN(test_no_wrong_name_past_symbol_end);
	return CHECK_DONE();
}
