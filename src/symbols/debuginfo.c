/* Finding, verifying and indexing debug information (see debuginfo.h). */
#include "symbols/debuginfo.h"

#include <linux/elf.h>

#include "deflate/deflate.h"
#include "rt/rt.h"
#include "rt/sys.h"
#include "symbols/functions.h"

#define DEBUG_FILE_MAX_BYTES (8ull << 30)
#define SYSTEM_DEBUG_ROOT "/usr/lib/debug"
#define PATH_CAP 4096
#define MAX_ROOTS 16
#ifndef SHF_COMPRESSED
#define SHF_COMPRESSED 0x800
#endif
#define ELFCOMPRESS_ZLIB_TYPE 1

/* The header of an SHF_COMPRESSED section (ELF64; linux/elf.h lacks it). */
struct elf64_chdr {
	uint32_t ch_type, ch_reserved;
	uint64_t ch_size, ch_addralign;
};

/* The first three are the ones read on demand (enum dwarf_section_id). */
enum { SEC_INFO, SEC_ABBREV, SEC_LINE, SEC_STR, SEC_LINE_STR, SEC_STR_OFFSETS, SEC_ADDR, SEC_RANGES,
       SEC_RNGLISTS, SEC_ARANGES, SEC_COUNT };
#define SEC_LAZY_COUNT 3
static const char *const section_names[SEC_COUNT] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str",
	".debug_str_offsets", ".debug_addr", ".debug_ranges", ".debug_rnglists", ".debug_aranges",
};

#define LAZY_PAGE 4096u
#define RESUME_SPACING (256u << 10) /* output bytes between resume points */
#define STREAM_WORK_BYTES (128u << 10)

/* A resume point of a compressed section's stream. */
struct resume_point {
	uint64_t in_bit, out;
	uint8_t *window;
	uint32_t window_len;
};

/* A compressed section inflated page by page on demand into an anonymous
 * mapping of its whole size (pages never loaded cost no memory). */
struct lazy_section {
	const uint8_t *in; /* the raw DEFLATE stream */
	size_t in_len;
	uint8_t *buf;
	size_t size, map_size;
	_Atomic uint64_t *have; /* one bit per page loaded, after the bytes in the same mapping */
	struct resume_point *points; /* by output offset; points[0] is the stream's start */
	uint32_t npoints, cap_points;
	/* Every block start a pass crossed, by output offset: a pass may resume
	 * at one whose 32 KiB before are loaded pages. */
	struct block_mark {
		uint64_t in_bit, out;
	} *marks;
	uint32_t nmarks, cap_marks;
	uint64_t frontier; /* furthest output offset inflated */
	uint64_t rework;   /* bytes inflated again, before the frontier */
	/* One shared resume point per RESUME_SPACING of output, in the same
	 * shared mapping: the first process of a fork family to pass a slot's
	 * stretch leaves the point there, and the others resume from it. */
	struct shared_point *shared;
	uint32_t nshared;
};

/* A resume point shared by a fork family: written once, by whoever passes
 * first (state WRITING, then READY once its fields and window are there).
 * A slot left WRITING (its writer died meanwhile) is never used. */
enum { SHARED_EMPTY, SHARED_WRITING, SHARED_READY };
#define SHARED_WINDOW (32u << 10)
struct shared_point {
	_Atomic uint32_t state;
	uint32_t window_len;
	uint64_t in_bit, out;
	uint8_t pad[LAZY_PAGE - 24];
	uint8_t window[SHARED_WINDOW];
};
_Static_assert(sizeof(struct shared_point) % LAZY_PAGE == 0, "shared points are whole pages");

struct debuginfo {
	void *map;
	size_t map_size;
	struct elf_image img;
	struct function_table symbols; /* .symtab functions, built on first use */
	bool symbols_tried;
	void *owned[SEC_COUNT]; /* decompressed copies */
	size_t owned_size[SEC_COUNT];
	struct lazy_section lazy[SEC_LAZY_COUNT];
	uint8_t *work;      /* the streaming window, allocated on the first load */
	size_t lazy_bytes;  /* pages loaded and resume windows held */
	size_t lazy_cap;    /* most lazy_bytes may reach */
	uint64_t inflated;  /* bytes inflated since opening */
	bool bound_said;
	struct dwarf_index *index;
	bool read; /* the mapping was read since the last debuginfo_trim */
	char path[PATH_CAP];
};

/* Gives back the pages of our mapping of the file in [off, off + len). */
static void release_pages(const struct debuginfo *di, uint64_t off, uint64_t len)
{
	uint64_t from = (off + 4095) & ~(uint64_t)4095, to = (off + len) & ~(uint64_t)4095;
	if (di->map != NULL && to > from && to <= di->map_size)
		(void)sys_madvise((uint8_t *)di->map + from, (size_t)(to - from), 4 /* MADV_DONTNEED */);
}

/* ---- reading what the binary says ---- */

void debug_ref_read(const struct elf_image *img, struct debug_ref *ref)
{
	struct elf_section s;
	rt_memset(ref, 0, sizeof(*ref));
	if (!elf_build_id_hex(img, ref->build_id, sizeof(ref->build_id)))
		ref->build_id[0] = 0;
	ref->has_dwarf = elf_section_by_name(img, ".debug_info", &s) && s.size > 0;
	/* .gnu_debuglink: a file name, NUL, padding to 4, then the CRC-32. */
	if (elf_section_by_name(img, ".gnu_debuglink", &s) && s.size >= 8) {
		const char *name = (const char *)img->data + s.offset;
		size_t len = rt_strnlen(name, (size_t)s.size);
		size_t crc_at = (len + 4) & ~(size_t)3;
		if (len > 0 && len < sizeof(ref->debuglink) && crc_at + 4 <= s.size &&
		    rt_memchr(name, '/', len) == NULL) {
			rt_memcpy(ref->debuglink, name, len);
			ref->debuglink[len] = 0;
			const uint8_t *p = img->data + s.offset + crc_at;
			ref->debuglink_crc = rt_load_le32(p);
		}
	}
}

/* ---- mapping files ---- */

static void *map_file(const char *path, size_t *size)
{
	struct statx st;
	rt_memset(&st, 0, sizeof(st));
	long fd = sys_open(path, O_RDONLY, 0);
	if (fd < 0)
		return NULL;
	void *p = (void *)-1L;
	long r = rt_statx((int)fd, "", AT_EMPTY_PATH, STATX_SIZE | STATX_TYPE, &st);
	if (r == 0 && (st.stx_mode & 0170000) == 0100000 /* S_ISREG */ && st.stx_size >= sizeof(Elf64_Ehdr) &&
	    st.stx_size <= DEBUG_FILE_MAX_BYTES)
		p = sys_mmap(NULL, (size_t)st.stx_size, PROT_READ, MAP_PRIVATE, (int)fd, 0);
	(void)sys_close((int)fd);
	if (SYS_IS_ERR(p))
		return NULL;
	*size = (size_t)st.stx_size;
	return p;
}

bool debuginfo_file_crc(const char *path, uint32_t *crc)
{
	size_t size = 0;
	void *p = map_file(path, &size);
	if (p == NULL)
		return false;
	*crc = crc32_update(0, p, size);
	(void)sys_munmap(p, size);
	return true;
}

/* ---- the CPU share of reading debug information ---- */

/* Reading DWARF costs CPU that grows with the file rather than with the
 * samples: inflating compressed sections (a unit deep in a large section
 * is reached by inflating all that comes before it) and decoding a unit's
 * line table and scope tree the first time one of its pcs is looked up (a
 * large translation unit takes milliseconds).  With a limit set, what this
 * process spends on both stays within DEBUG_BASE_NS plus `ppm` of its CPU
 * time so far and that of the children it has waited for, and plus no more
 * than what the cap on all our CPU leaves after the rest of the profiler's
 * measured cost (debuginfo_note_profiler_cost); a lookup that
 * would go past it is deferred (names without lines now; a later export,
 * with more CPU behind it, reads it).  The children count because what a
 * parent reads before it forks is inherited by the children forked
 * afterwards: a prefork server's parent, which does little itself, spends
 * once what each child would otherwise spend on its own.  Each kind of work
 * is priced by its own rate, measured once enough of it was timed.
 * Lookups run under the symbol registry's lock: plain fields. */
#define DEBUG_BASE_NS 1000000ull     /* 1 ms, whatever the process's CPU */
#define DEBUG_RATE_TIMED (1u << 20)  /* bytes timed before the measured rate is used */
/* Cautious priors (a slower or busier machine is not known yet), since a
 * deferred lookup is redone at a later export but CPU spent is not given
 * back: over four times the ~1,800 ns per KiB inflated that deflate_stream
 * takes on a current x86-64 core, and over one and a half times the ~19,000
 * ns per KiB of .debug_info that decoding a large unit took there (libpython
 * 3.11 built with -g, unicodeobject.c's 489 KiB unit: 9.5 ms). */
#define DEBUG_INFLATE_NS_PER_KIB_GUESS 8192u
#define DEBUG_DECODE_NS_PER_KIB_GUESS 32768u
struct share_rate {
	uint64_t ns, bytes;
	uint32_t guess_ns_per_kib;
};
/* What a forking parent may spend apart from its share while it reads the
 * debug information of the frames its children start from
 * (debuginfo_share_for_children): the small sections inflated whole and
 * the index, which every child forked afterwards inherits instead of
 * reading each on its own (libc's separate debug file: about 0.5 MiB
 * inflated, 1.5 ms, per child). */
#define DEBUG_FOR_CHILDREN_NS 8000000ull /* 8 ms, once per forking process */
static struct {
	uint32_t ppm; /* 0: no limit */
	int pid;      /* the process the counts are of (a fork child starts anew) */
	bool for_children;          /* debuginfo_share_for_children(true) */
	uint64_t children_spent_ns; /* of DEBUG_FOR_CHILDREN_NS, in this process */
	uint64_t spent_ns, deferred;
	uint64_t profiler_ns; /* debuginfo_note_profiler_cost, in this process */
	uint32_t cap_ppm;     /* debuginfo_limit_inflating */
	struct share_rate inflate, decode;
	uint64_t cpu_ns, cpu_read_at; /* the last reading of the CPU behind the share, and when */
} share = {.inflate = {0, 0, DEBUG_INFLATE_NS_PER_KIB_GUESS},
	   .decode = {0, 0, DEBUG_DECODE_NS_PER_KIB_GUESS}};

void debuginfo_limit_inflating(uint32_t ppm, uint32_t cap_ppm)
{
	share.ppm = ppm;
	share.cap_ppm = cap_ppm;
}

uint64_t debuginfo_deferred_lookups(void) { return share.deferred; }

static void share_this_process(void)
{
	int pid = (int)sys_getpid();
	if (share.pid != pid) {
		share.pid = pid;
		share.spent_ns = share.deferred = share.children_spent_ns = share.profiler_ns = 0;
		share.inflate.ns = share.inflate.bytes = share.decode.ns = share.decode.bytes = 0;
		share.cpu_read_at = 0;
	}
}

uint64_t debuginfo_reading_ns(uint64_t *inflate_bytes, uint64_t *decode_bytes)
{
	share_this_process();
	*inflate_bytes = share.inflate.bytes;
	*decode_bytes = share.decode.bytes;
	return share.spent_ns + share.children_spent_ns;
}

/* The process's and its waited-for children's CPU time, read again once
 * a millisecond has passed: an export deferring the lookups of a few
 * hundred pcs reads it once, not twice per pc (two system calls). */
#define SHARE_CPU_READ_EVERY_NS 1000000ull
static uint64_t share_cpu_ns(void)
{
	uint64_t now = rt_monotonic_ns();
	if (share.cpu_read_at == 0 || now - share.cpu_read_at >= SHARE_CPU_READ_EVERY_NS) {
		share.cpu_ns = rt_process_cpu_ns() + rt_children_cpu_ns();
		share.cpu_read_at = now;
	}
	return share.cpu_ns;
}

/* Whether `bytes` more of the work `rate` prices stays within the share. */
static bool share_allows(const struct share_rate *rate, uint64_t bytes)
{
	if (share.ppm == 0 || bytes == 0)
		return true;
	share_this_process();
	uint64_t ns_per_kib = rate->bytes >= DEBUG_RATE_TIMED ? rate->ns / (rate->bytes >> 10)
							      : rate->guess_ns_per_kib;
	uint64_t cost = ((bytes + 1023) >> 10) * ns_per_kib;
	if (share.for_children)
		return share.children_spent_ns + cost <= DEBUG_FOR_CHILDREN_NS;
	uint64_t cpu_ms = share_cpu_ns() / 1000000u, beyond_base = cpu_ms * share.ppm;
	/* Within the cap on all our CPU: what sampling has used of it is not
	 * this work's (a short process with deep stacks and many allocation
	 * samples reaches the cap from those alone). */
	if (share.cap_ppm != 0) {
		uint64_t cap = cpu_ms * share.cap_ppm;
		beyond_base = RT_MIN(beyond_base, cap > share.profiler_ns ? cap - share.profiler_ns : 0);
	}
	return share.spent_ns + cost <= DEBUG_BASE_NS + beyond_base;
}

uint64_t debuginfo_profiler_ns(uint64_t *cap_ns)
{
	share_this_process();
	*cap_ns = share.cap_ppm ? share_cpu_ns() / 1000000u * share.cap_ppm : 0;
	return share.profiler_ns;
}

void debuginfo_note_profiler_cost(uint64_t spent_ns)
{
	share_this_process();
	/* Reading so far ran on our threads (periodic exports, the reading for
	 * children), whose CPU spent_ns counts: that part is the share's own. */
	uint64_t reading = share.spent_ns + share.children_spent_ns;
	share.profiler_ns = spent_ns > reading ? spent_ns - reading : 0;
}

void debuginfo_share_for_children(bool on)
{
	share_this_process();
	share.for_children = on;
}

/* Whether `bytes` more of that work goes past the share: the lookup or
 * open that asked is deferred, and counted. */
static bool share_defers(const struct share_rate *rate, uint64_t bytes)
{
	if (share_allows(rate, bytes))
		return false;
	share.deferred++;
	return true;
}

bool debuginfo_load_allowed(uint64_t bytes) { return !share_defers(&share.inflate, bytes); }

static void share_spent(struct share_rate *rate, uint64_t ns, uint64_t bytes)
{
	share_this_process();
	if (share.for_children)
		share.children_spent_ns += ns;
	else
		share.spent_ns += ns;
	rate->ns += ns;
	rate->bytes += bytes;
}

/* ---- sections ---- */

static void inflated_add(struct debuginfo *di, uint64_t n) { di->inflated += n; }

/* Sets up a compressed section for loading on demand: its zlib header
 * checked, an address range reserved for its bytes. */
static bool lazy_init(struct lazy_section *l, const struct elf_image *img,
		      const struct elf_section *s, const struct elf64_chdr *ch)
{
	const uint8_t *z = img->data + s->offset + sizeof(*ch);
	size_t zlen = (size_t)s->size - sizeof(*ch);
	if (zlen < 6 || !zlib_header_ok(z, zlen))
		return false;
	size_t bytes = ((size_t)ch->ch_size + LAZY_PAGE - 1) & ~(size_t)(LAZY_PAGE - 1);
	size_t bitmap = ((bytes / LAZY_PAGE + 63) / 64 * sizeof(uint64_t) + LAZY_PAGE - 1) &
			~(size_t)(LAZY_PAGE - 1);
	/* Shared: processes forked after the section is set up see the pages
	 * any of them loads (the bytes are the same for all), so prefork
	 * workers inflate a unit once between them, not once each; and the
	 * resume points any of them leaves, so a unit far into the section
	 * costs a sibling one stretch, not the whole stream before it. */
	uint32_t nshared = (uint32_t)(ch->ch_size / RESUME_SPACING);
	size_t shared_bytes = (size_t)nshared * sizeof(struct shared_point);
	size_t map_size = bytes + bitmap + shared_bytes;
	void *buf = rt_shared_pages_alloc(map_size);
	l->points = rt_calloc(16, sizeof(*l->points));
	if (l->points == NULL || buf == NULL) {
		rt_free(l->points);
		rt_shared_pages_free(buf, map_size);
		rt_memset(l, 0, sizeof(*l));
		return false;
	}
	l->have = (_Atomic uint64_t *)((uint8_t *)buf + bytes);
	l->shared = nshared ? (struct shared_point *)((uint8_t *)buf + bytes + bitmap) : NULL;
	l->nshared = nshared;
	l->in = z + 2;
	l->in_len = zlen - 2;
	l->buf = buf;
	l->size = (size_t)ch->ch_size;
	l->map_size = map_size;
	l->cap_points = 16;
	l->npoints = 1; /* the start: bit 0, offset 0, no window */
	return true;
}

static void lazy_free(struct lazy_section *l)
{
	for (uint32_t i = 0; i < l->npoints; i++)
		rt_free(l->points[i].window);
	rt_free(l->points);
	rt_free(l->marks);
	rt_shared_pages_free(l->buf, l->map_size);
	rt_memset(l, 0, sizeof(*l));
}

static bool page_have(const struct lazy_section *l, size_t page)
{
	return (atomic_load_explicit(&l->have[page / 64], memory_order_acquire) >> (page % 64)) & 1u;
}

/* Whether the window before output offset `out` is in loaded pages. */
static bool window_loaded(const struct lazy_section *l, uint64_t out)
{
	uint64_t w = out < 32768 ? out : 32768;
	for (uint64_t pg = (out - w) / LAZY_PAGE; w > 0 && pg <= (out - 1) / LAZY_PAGE; pg++)
		if (!page_have(l, (size_t)pg))
			return false;
	return true;
}

/* One load: the output range wanted and where the stream got to. */
struct lazy_load {
	struct debuginfo *di;
	struct lazy_section *l;
	uint64_t lo, hi, reached;
};

static bool lazy_put(void *ctx, uint64_t offset, const uint8_t *p, size_t n)
{
	struct lazy_load *ld = ctx;
	inflated_add(ld->di, n);
	struct lazy_section *l = ld->l;
	if (offset < l->frontier)
		l->rework += l->frontier - offset < n ? l->frontier - offset : n;
	if (offset + n > l->frontier)
		l->frontier = offset + n;
	uint64_t from = offset > ld->lo ? offset : ld->lo, to = offset + n < ld->hi ? offset + n : ld->hi;
	if (from < to)
		rt_memcpy(ld->l->buf + from, p + (from - offset), (size_t)(to - from));
	ld->reached = offset + n;
	return offset + n < ld->hi;
}

/* The shared slot of the stretch output offset `out` is in (NULL: none). */
static struct shared_point *shared_slot(const struct lazy_section *l, uint64_t out)
{
	uint64_t i = out / RESUME_SPACING;
	return i >= 1 && i <= l->nshared ? &l->shared[i - 1] : NULL;
}

/* Leaves `at` in its stretch's shared slot if that is empty (the first
 * block start past the stretch's beginning); true when the stretch has a
 * shared point now, which then serves this process too. */
static bool share_point(struct debuginfo *di, struct lazy_section *l, const struct inflate_resume *at)
{
	struct shared_point *sp = shared_slot(l, at->out_offset);
	if (sp == NULL)
		return false;
	uint32_t state = atomic_load_explicit(&sp->state, memory_order_acquire);
	if (state != SHARED_EMPTY)
		return state == SHARED_READY;
	if (at->window_len > SHARED_WINDOW || di->lazy_bytes + sizeof(*sp) > di->lazy_cap ||
	    !atomic_compare_exchange_strong(&sp->state, &state, SHARED_WRITING))
		return false;
	sp->in_bit = at->in_bit;
	sp->out = at->out_offset;
	sp->window_len = (uint32_t)at->window_len;
	rt_memcpy(sp->window, at->window, at->window_len);
	atomic_store_explicit(&sp->state, SHARED_READY, memory_order_release);
	di->lazy_bytes += sizeof(*sp);
	return true;
}

/* The latest shared resume point at or before output offset `lo` that is
 * past `after` (false: none). */
static bool shared_before(const struct lazy_section *l, uint64_t lo, uint64_t after,
			  struct resume_point *out)
{
	for (uint64_t i = RT_MIN(lo / RESUME_SPACING, (uint64_t)l->nshared); i >= 1; i--) {
		const struct shared_point *sp = &l->shared[i - 1];
		if (atomic_load_explicit(&sp->state, memory_order_acquire) != SHARED_READY ||
		    sp->out > lo)
			continue;
		if (sp->out <= after)
			return false;
		*out = (struct resume_point){sp->in_bit, sp->out, (uint8_t *)sp->window, sp->window_len};
		return true;
	}
	return false;
}

/* Keeps a resume point every RESUME_SPACING bytes past the last one. */
static void lazy_block(void *ctx, const struct inflate_resume *at)
{
	struct lazy_load *ld = ctx;
	struct lazy_section *l = ld->l;
	if (l->nmarks == 0 || at->out_offset > l->marks[l->nmarks - 1].out) {
		if (l->nmarks == l->cap_marks) {
			uint32_t ncap = l->cap_marks ? 2 * l->cap_marks : 64;
			struct block_mark *n = rt_realloc(l->marks, (size_t)ncap * sizeof(*n));
			if (n != NULL) {
				l->marks = n;
				l->cap_marks = ncap;
			}
		}
		if (l->nmarks < l->cap_marks)
			l->marks[l->nmarks++] = (struct block_mark){at->in_bit, at->out_offset};
	}
	if (share_point(ld->di, l, at))
		return;
	const struct resume_point *last = &l->points[l->npoints - 1];
	if (at->out_offset < last->out + RESUME_SPACING ||
	    ld->di->lazy_bytes + at->window_len > ld->di->lazy_cap)
		return;
	if (l->npoints == l->cap_points) {
		struct resume_point *n = rt_realloc(l->points, 2 * (size_t)l->cap_points * sizeof(*n));
		if (n == NULL)
			return;
		l->points = n;
		l->cap_points *= 2;
	}
	uint8_t *w = rt_malloc(at->window_len);
	if (w == NULL)
		return;
	rt_memcpy(w, at->window, at->window_len);
	l->points[l->npoints++] = (struct resume_point){at->in_bit, at->out_offset, w,
							(uint32_t)at->window_len};
	ld->di->lazy_bytes += at->window_len;
}

/* dwarf_sections.load: inflates the pages of [off, off + len) not loaded
 * yet, from the last resume point before them. */
static bool lazy_load(void *ctx, enum dwarf_section_id which, uint64_t off, uint64_t len)
{
	struct debuginfo *di = ctx;
	if ((unsigned)which >= SEC_LAZY_COUNT || di->lazy[which].buf == NULL)
		return true;
	struct lazy_section *l = &di->lazy[which];
	if (off >= l->size || len == 0)
		return len == 0;
	if (len > l->size - off)
		len = l->size - off;
	size_t first = (size_t)(off / LAZY_PAGE), last = (size_t)((off + len - 1) / LAZY_PAGE);
	while (first <= last && page_have(l, first))
		first++;
	while (last >= first && page_have(l, last))
		last--;
	if (first > last)
		return true;
	uint64_t lo = (uint64_t)first * LAZY_PAGE, hi = ((uint64_t)last + 1) * LAZY_PAGE;
	if (hi > l->size)
		hi = l->size;
	if (di->lazy_bytes + (hi - lo) > di->lazy_cap) {
		if (!di->bound_said)
			rt_warn("debug information of %s needs more than its memory bound (%zu KiB of "
				"inflated sections); frames there keep function names without lines",
				di->path, di->lazy_cap >> 10);
		di->bound_said = true;
		return false;
	}
	if (di->work == NULL && (di->work = rt_malloc(STREAM_WORK_BYTES)) == NULL)
		return false;
	uint32_t p = l->npoints - 1;
	while (p > 0 && l->points[p].out > lo)
		p--;
	const struct resume_point *rp = &l->points[p];
	struct resume_point here = *rp;
	struct resume_point shared;
	if (shared_before(l, lo, rp->out, &shared)) {
		here = shared;
		rp = &here;
	}
	/* A later block start whose window is loaded saves inflating from rp. */
	uint32_t m = l->nmarks;
	while (m > 0 && l->marks[m - 1].out > lo)
		m--;
	for (uint32_t tries = 0; m > 0 && tries < 64 && l->marks[m - 1].out > rp->out; m--, tries++) {
		const struct block_mark *bm = &l->marks[m - 1];
		if (window_loaded(l, bm->out)) {
			uint64_t w = bm->out < 32768 ? bm->out : 32768;
			here = (struct resume_point){bm->in_bit, bm->out, l->buf + bm->out - w, (uint32_t)w};
			break;
		}
	}
	rp = &here;
	/* Once lookups have inflated again a quarter of the section, the
	 * pages inflated on the way are kept too (within the bound), so many
	 * units in one region cost one pass, not one pass each. */
	if (l->rework > l->size / 4) {
		size_t keep_from = (size_t)((rp->out + LAZY_PAGE - 1) / LAZY_PAGE);
		size_t more = 0;
		for (size_t pg = keep_from; pg < first; pg++)
			more += !page_have(l, pg);
		if (keep_from < first && di->lazy_bytes + (hi - lo) + more * LAZY_PAGE <= di->lazy_cap) {
			first = keep_from;
			lo = (uint64_t)first * LAZY_PAGE;
		}
		/* Reading ahead: the next lookups of a region (units in order,
		 * abbreviation tables growing a window at a time) find their
		 * pages loaded instead of inflating the same block again. */
		uint64_t ahead = hi + RESUME_SPACING < l->size ? hi + RESUME_SPACING : l->size;
		size_t more_ahead = 0;
		for (size_t pg = last + 1; (uint64_t)pg * LAZY_PAGE < ahead; pg++)
			more_ahead += !page_have(l, pg);
		if (di->lazy_bytes + (ahead - lo) + more_ahead * LAZY_PAGE <= di->lazy_cap) {
			hi = ahead;
			last = (size_t)((hi - 1) / LAZY_PAGE);
		}
	}
	struct inflate_resume from = {rp->in_bit, rp->out, rp->window, rp->window_len};
	struct lazy_load ld = {di, l, lo, hi, rp->out};
	struct inflate_sink sink = {&ld, lazy_put, lazy_block};
	uint64_t t0 = rt_thread_cpu_ns();
	int rc = deflate_stream(l->in, l->in_len, &from, hi, di->work, STREAM_WORK_BYTES, &sink);
	share_spent(&share.inflate, rt_thread_cpu_ns() - t0, ld.reached > rp->out ? ld.reached - rp->out : 0);
	/* The compressed bytes read are read again only by a later pass. */
	release_pages(di, (uint64_t)(l->in - (const uint8_t *)di->map), l->in_len);
	if ((rc != DEFLATE_OK && rc != DEFLATE_STOPPED) || ld.reached < hi)
		return false;
	for (size_t pg = first; pg <= last; pg++) {
		if (!page_have(l, pg)) {
			/* After its bytes: another process may read it once set. */
			(void)atomic_fetch_or_explicit(&l->have[pg / 64], 1ull << (pg % 64),
						       memory_order_release);
			di->lazy_bytes += LAZY_PAGE;
		}
	}
	return true;
}

/* The bytes of one section; a compressed one (SHF_COMPRESSED, zlib) is
 * inflated into memory the debuginfo owns, within the budget. */
static bool section_bytes(struct debuginfo *di, const struct elf_image *img, uint32_t which,
			  bool lazy, size_t *budget, const uint8_t **data, size_t *size)
{
	struct elf_section s;
	*data = NULL;
	*size = 0;
	if (!elf_section_by_name(img, section_names[which], &s) || s.size == 0)
		return false;
	if (!(s.flags & SHF_COMPRESSED)) {
		*data = img->data + s.offset;
		*size = (size_t)s.size;
		return true;
	}
	struct elf64_chdr ch;
	if (s.size < sizeof(ch))
		return false;
	rt_memcpy(&ch, img->data + s.offset, sizeof(ch));
	if (ch.ch_type != ELFCOMPRESS_ZLIB_TYPE || ch.ch_size == 0 || ch.ch_size > DEBUG_FILE_MAX_BYTES)
		return false;
	if (which < SEC_LAZY_COUNT && lazy && lazy_init(&di->lazy[which], img, &s, &ch)) {
		*data = di->lazy[which].buf;
		*size = di->lazy[which].size;
		return true;
	}
	if (ch.ch_size > *budget)
		return false;
	inflated_add(di, ch.ch_size);
	uint8_t *out = rt_malloc((size_t)ch.ch_size);
	if (out == NULL)
		return false;
	size_t used = 0, len = 0;
	int r = zlib_decompress(img->data + s.offset + sizeof(ch), (size_t)s.size - sizeof(ch), out,
				(size_t)ch.ch_size, &used, &len);
	if (r != DEFLATE_OK || len != ch.ch_size) {
		rt_free(out);
		return false;
	}
	/* Only the inflated copy is read from now on. */
	release_pages(di, s.offset, s.size);
	di->owned[which] = out;
	di->owned_size[which] = len;
	*budget -= len;
	*data = out;
	*size = len;
	return true;
}

static void debuginfo_release(struct debuginfo *di)
{
	dwarf_index_free(di->index);
	function_table_free(&di->symbols);
	for (uint32_t i = 0; i < SEC_COUNT; i++)
		rt_free(di->owned[i]);
	for (uint32_t i = 0; i < SEC_LAZY_COUNT; i++)
		lazy_free(&di->lazy[i]);
	rt_free(di->work);
	if (di->map != NULL)
		(void)sys_munmap(di->map, di->map_size);
	rt_free(di);
}

void debuginfo_free(struct debuginfo *di)
{
	if (di != NULL)
		debuginfo_release(di);
}

/* The bytes the sections inflated whole at open come to (all compressed
 * ones but those inflated page by page when `lazy`). */
static uint64_t whole_inflate_bytes(const struct elf_image *img, bool lazy)
{
	uint64_t bytes = 0;
	for (uint32_t i = 0; i < SEC_COUNT; i++) {
		struct elf_section s;
		struct elf64_chdr ch;
		if ((i < SEC_LAZY_COUNT && lazy) || !elf_section_by_name(img, section_names[i], &s) ||
		    !(s.flags & SHF_COMPRESSED) || s.size < sizeof(ch))
			continue;
		rt_memcpy(&ch, img->data + s.offset, sizeof(ch));
		if (ch.ch_type == ELFCOMPRESS_ZLIB_TYPE && ch.ch_size <= DEBUG_FILE_MAX_BYTES)
			bytes += ch.ch_size;
	}
	return bytes;
}

/* Inflates what the DWARF index needs and builds it; false with *deferred
 * set (the bytes needed) if the CPU share does not allow that now. */
static bool load_dwarf(struct debuginfo *di, size_t budget, uint64_t *deferred)
{
	*deferred = 0;
	struct dwarf_sections s;
	rt_memset(&s, 0, sizeof(s));
	const uint8_t **data[SEC_COUNT] = {&s.info, &s.abbrev, &s.line, &s.str, &s.line_str,
					    &s.str_offsets, &s.addr, &s.ranges, &s.rnglists, &s.aranges};
	size_t *size[SEC_COUNT] = {&s.info_size, &s.abbrev_size, &s.line_size, &s.str_size,
				   &s.line_str_size, &s.str_offsets_size, &s.addr_size,
				   &s.ranges_size, &s.rnglists_size, &s.aranges_size};
	/* With .debug_aranges to find units by, compressed .debug_info,
	 * .debug_abbrev and .debug_line are inflated page by page as lookups
	 * need them, within half the budget; the other sections (small) are
	 * inflated whole.  Inflated sections count against the budget; the
	 * index gets the rest. */
	struct elf_section ar;
	bool lazy = elf_section_by_name(&di->img, section_names[SEC_ARANGES], &ar) && ar.size > 0;
	/* The whole sections are the cost of loading: a process that has run
	 * too little for it names its frames without lines until it has. */
	uint64_t whole = whole_inflate_bytes(&di->img, lazy);
	if (share_defers(&share.inflate, whole)) {
		*deferred = whole;
		return false;
	}
	uint64_t t0 = rt_thread_cpu_ns();
	size_t left = budget;
	for (uint32_t i = 0; i < SEC_COUNT; i++)
		(void)section_bytes(di, &di->img, i, lazy, &left, data[i], size[i]);
	if (whole > 0)
		share_spent(&share.inflate, rt_thread_cpu_ns() - t0, whole);
	for (uint32_t i = 0; i < SEC_LAZY_COUNT; i++) {
		if (di->lazy[i].buf != NULL) {
			s.load = lazy_load;
			s.load_ctx = di;
		}
	}
	if (s.load != NULL) {
		di->lazy_cap = left / 2;
		left -= di->lazy_cap;
	}
	di->index = dwarf_index_new(&s, left);
	di->read = true;
	return di->index != NULL;
}

/* Opens `path`; checks the build id when want_id is given and the CRC when
 * check_crc.  NULL if the file is unusable or its DWARF cannot be loaded;
 * with *deferred set (the bytes needed), the file with its DWARF not loaded
 * if inflating its small sections whole would exceed the CPU share. */
static struct debuginfo *open_checked(const char *path, const char *want_id, bool check_crc,
				      uint32_t crc, size_t budget, uint64_t *deferred)
{
	struct debuginfo *di = rt_calloc(1, sizeof(*di));
	if (di == NULL)
		return NULL;
	rt_strlcpy(di->path, path, sizeof(di->path));
	di->map = map_file(path, &di->map_size);
	struct elf_image img;
	if (di->map == NULL || !elf_open(&img, di->map, di->map_size))
		goto fail;
	di->img = img;
	if (want_id != NULL && want_id[0]) {
		char id[ELF_BUILD_ID_HEX_CAP];
		if (!elf_build_id_hex(&img, id, sizeof(id)) || !rt_streq(id, want_id))
			goto fail;
	}
	if (check_crc && crc32_update(0, di->map, di->map_size) != crc)
		goto fail;
	/* Deferred, the verified file still names code from its .symtab. */
	if (load_dwarf(di, budget, deferred) || *deferred != 0)
		return di;
fail:
	debuginfo_release(di);
	return NULL;
}

bool debuginfo_load_deferred(struct debuginfo *di, size_t budget, uint64_t *deferred)
{
	return di->index != NULL || load_dwarf(di, budget, deferred);
}

struct debuginfo *debuginfo_open_file(const char *path, const char *build_id, size_t budget)
{
	uint64_t deferred = 0;
	return open_checked(path, build_id, false, 0, budget, &deferred);
}

/* Splits dirs and appends /usr/lib/debug; returns the number of roots. */
static uint32_t debug_roots(const char *dirs, char roots[MAX_ROOTS][PATH_CAP])
{
	uint32_t n = 0;
	const char *p = dirs != NULL ? dirs : "";
	while (*p && n + 1 < MAX_ROOTS) {
		const char *end = rt_strchr(p, ':');
		size_t len = end != NULL ? (size_t)(end - p) : rt_strlen(p);
		while (len > 1 && p[len - 1] == '/')
			len--;
		if (len > 0 && len < PATH_CAP) {
			rt_memcpy(roots[n], p, len);
			roots[n][len] = 0;
			n++;
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	rt_strlcpy(roots[n++], SYSTEM_DEBUG_ROOT, PATH_CAP);
	return n;
}

struct debuginfo *debuginfo_open(const char *path, const struct debug_ref *ref, const char *dirs,
				 size_t budget, uint64_t *deferred)
{
	*deferred = 0;
	if (ref->has_dwarf) {
		struct debuginfo *di = open_checked(path, NULL, false, 0, budget, deferred);
		if (di != NULL || *deferred != 0)
			return di;
	}
	if (!ref->build_id[0] && !ref->debuglink[0])
		return NULL;
	char(*roots)[PATH_CAP] = rt_malloc(sizeof(char[MAX_ROOTS][PATH_CAP]));
	char *cand = rt_malloc(PATH_CAP);
	struct debuginfo *di = NULL;
	if (roots == NULL || cand == NULL)
		goto out;
	uint32_t nroots = debug_roots(dirs, roots);
	size_t idlen = rt_strlen(ref->build_id);
	for (uint32_t i = 0; di == NULL && *deferred == 0 && idlen > 2 && i < nroots; i++) {
		if (rt_snprintf(cand, PATH_CAP, "%s/.build-id/%.2s/%s.debug", roots[i], ref->build_id,
				ref->build_id + 2) < PATH_CAP)
			di = open_checked(cand, ref->build_id, false, 0, budget, deferred);
	}
	if (di == NULL && *deferred == 0 && ref->debuglink[0]) {
		/* The binary's directory. */
		const char *slash = NULL;
		for (const char *q = path; *q; q++)
			if (*q == '/')
				slash = q;
		int dlen = slash != NULL ? (int)(slash - path) : 0;
		if (rt_snprintf(cand, PATH_CAP, "%.*s/%s", dlen, path, ref->debuglink) < PATH_CAP &&
		    !rt_streq(cand, path))
			di = open_checked(cand, NULL, true, ref->debuglink_crc, budget, deferred);
		if (di == NULL && *deferred == 0 &&
		    rt_snprintf(cand, PATH_CAP, "%.*s/.debug/%s", dlen, path, ref->debuglink) < PATH_CAP)
			di = open_checked(cand, NULL, true, ref->debuglink_crc, budget, deferred);
		for (uint32_t i = 0; di == NULL && *deferred == 0 && i < nroots; i++) {
			if (rt_snprintf(cand, PATH_CAP, "%s%.*s/%s", roots[i], dlen, path, ref->debuglink) <
			    PATH_CAP)
				di = open_checked(cand, NULL, true, ref->debuglink_crc, budget, deferred);
		}
	}
out:
	rt_free(roots);
	rt_free(cand);
	return di;
}

const char *debuginfo_path(const struct debuginfo *di) { return di->path; }

enum dwarf_lookup_status debuginfo_lookup(struct debuginfo *di, uint64_t addr,
					  struct dwarf_frame frames[DWARF_MAX_FRAMES], uint32_t *n)
{
	di->read = true;
	*n = 0;
	if (di->index == NULL)
		return DWARF_DEFERRED; /* opened for its names, its DWARF not loaded yet */
	/* A unit whose pages are not inflated yet costs inflating from the
	 * last resume point before it. */
	const struct lazy_section *info = &di->lazy[SEC_INFO];
	uint64_t off;
	if (share.ppm != 0 && info->buf != NULL && di->index != NULL && dwarf_unit_offset(di->index, addr, &off) &&
	    off < info->size && !page_have(info, (size_t)(off / LAZY_PAGE))) {
		uint32_t p = info->npoints - 1;
		while (p > 0 && info->points[p].out > off)
			p--;
		if (share_defers(&share.inflate, off - info->points[p].out + LAZY_PAGE))
			return DWARF_DEFERRED;
	}
	/* So does a unit not decoded yet: its size in .debug_info prices it. */
	uint64_t decode = share.ppm != 0 && di->index != NULL ? dwarf_decode_pending(di->index, addr) : 0;
	if (decode > 0 && share_defers(&share.decode, decode))
		return DWARF_DEFERRED;
	uint64_t t0 = decode > 0 ? rt_thread_cpu_ns() : 0, inflating0 = share.inflate.ns;
	enum dwarf_lookup_status st = dwarf_lookup(di->index, addr, frames, n);
	if (decode > 0) {
		/* Without the inflating the decoding did (priced and counted apart). */
		uint64_t ns = rt_thread_cpu_ns() - t0, inflating = share.inflate.ns - inflating0;
		share_spent(&share.decode, ns > inflating ? ns - inflating : 0, decode);
	}
	/* A unit whose bytes the memory bound kept out reads as over budget. */
	if (st == DWARF_NOT_FOUND && di->bound_said)
		st = DWARF_OVER_BUDGET;
	/* DWARF names follow the same naming rules as symbol tables. */
	if (st == DWARF_FOUND)
		for (uint32_t i = 0; i < *n && i < DWARF_MAX_FRAMES; i++)
			frames[i].name = function_display_name(frames[i].name);
	return st;
}

#define PAGE_DOWN(x) ((x) & ~(uint64_t)0xfff)

bool debuginfo_mapping_vaddr(const struct debuginfo *di, uint64_t map_offset, uint64_t rel,
			     uint64_t *vaddr)
{
	struct elf_segment seg;
	uint64_t offset = map_offset + rel;
	uint32_t n_exec = 0;
	uint64_t only_exec = 0, same_page = 0;
	bool have_same_page = false;
	for (uint32_t i = 0; i < di->img.phnum; i++) {
		if (!elf_segment_at(&di->img, i, &seg) || seg.type != PT_LOAD)
			continue;
		if (seg.filesz > 0 && offset >= seg.offset && offset - seg.offset < seg.filesz) {
			*vaddr = offset - seg.offset + seg.vaddr;
			return true;
		}
		if (seg.filesz == 0 && (seg.flags & PF_X)) {
			n_exec++;
			only_exec = PAGE_DOWN(seg.vaddr);
			if (PAGE_DOWN(seg.vaddr) == PAGE_DOWN(map_offset)) {
				same_page = PAGE_DOWN(seg.vaddr);
				have_same_page = true;
			}
		}
	}
	if (have_same_page) {
		*vaddr = same_page + (map_offset & 0xfff) + rel;
		return true;
	}
	if (n_exec == 1) {
		*vaddr = only_exec + (map_offset & 0xfff) + rel;
		return true;
	}
	return false;
}

const char *debuginfo_symbol(struct debuginfo *di, uint64_t addr)
{
	di->read = true;
	if (!di->symbols_tried) {
		di->symbols_tried = true;
		(void)function_table_build(&di->symbols, &di->img, false, true);
	}
	return function_table_lookup(&di->symbols, addr);
}

static size_t owned_bytes(const struct debuginfo *di)
{
	size_t n = di->lazy_bytes;
	for (uint32_t i = 0; i < SEC_COUNT; i++)
		n += di->owned_size[i];
	return n;
}

size_t debuginfo_bytes(const struct debuginfo *di)
{
	return owned_bytes(di) + (di->index != NULL ? dwarf_index_bytes(di->index) : 0);
}

size_t debuginfo_peak_bytes(const struct debuginfo *di)
{
	return owned_bytes(di) + (di->index != NULL ? dwarf_index_peak_bytes(di->index) : 0);
}

uint64_t debuginfo_inflated_bytes(const struct debuginfo *di) { return di->inflated; }

void debuginfo_trim(struct debuginfo *di)
{
	if (di->read)
		release_pages(di, 0, di->map_size);
	di->read = false;
}
