/* The DWARF index: unit table, per-unit caches of line tables and scopes,
 * and lookups (see dwarf.h). */
#include "dwarf/dwarf.h"
#include "dwarf/internal.h"

#include "rt/rt.h"
#include "rt/search.h"

enum {
	DW_TAG_inlined_subroutine = 0x1d,
	DW_TAG_subprogram = 0x2e,
};
enum {
	DW_AT_name = 0x03,
	DW_AT_stmt_list = 0x10,
	DW_AT_low_pc = 0x11,
	DW_AT_high_pc = 0x12,
	DW_AT_comp_dir = 0x1b,
	DW_AT_abstract_origin = 0x31,
	DW_AT_specification = 0x47,
	DW_AT_ranges = 0x55,
	DW_AT_call_file = 0x58,
	DW_AT_call_line = 0x59,
	DW_AT_linkage_name = 0x6e,
	DW_AT_str_offsets_base = 0x72,
	DW_AT_addr_base = 0x73,
	DW_AT_rnglists_base = 0x74,
	DW_AT_MIPS_linkage_name = 0x2007,
	DW_AT_GNU_addr_base = 0x2133,
};
enum { DW_UT_compile = 1, DW_UT_partial = 3 };
enum {
	DW_RLE_end_of_list, DW_RLE_base_addressx, DW_RLE_startx_endx, DW_RLE_startx_length,
	DW_RLE_offset_pair, DW_RLE_base_address, DW_RLE_start_end, DW_RLE_start_length,
};

#define MAX_DEPTH 256u        /* deeper entry trees are cut there */
#define MAX_ATTRS 1024u       /* attributes of one abbreviation */
#define MAX_RANGES 4096u      /* ranges of one entry */
#define MAX_ORIGIN_HOPS 8u    /* abstract_origin/specification links followed for a name */
#define NO_SCOPE UINT32_MAX
#define ARENA_CHUNK 16384u

/* ---- abbreviations ---- */

struct abbrev {
	uint64_t code, tag;
	size_t specs; /* offset in .debug_abbrev of the attribute specifications */
	bool children;
};

struct abbrev_table {
	struct abbrev *decls;
	uint32_t n;
	bool dense; /* decls[i].code == i + 1 */
};

/* ---- entries ---- */

struct die {
	uint64_t tag;
	bool children;
	struct dw_val low_pc, high_pc, ranges, call_file, call_line, origin, spec, name, linkage,
		stmt_list, comp_dir, str_offsets_base, addr_base, rnglists_base;
};

struct scope {
	uint64_t lo, hi;
	uint64_t die;    /* .debug_info offset of the entry */
	uint32_t parent; /* scope index of the enclosing subprogram or inlined call */
	uint32_t depth;
	uint32_t call_file, call_line;
};

/* One address range of a subprogram, and the block of scopes that follow
 * it in entry order (its inlined calls, up to the next subprogram). */
struct root {
	uint64_t lo, hi;
	uint32_t begin, end;
};

struct unit_cache {
	struct abbrev_table abbrevs;
	struct dw_line_table lines;
	bool has_lines;
	struct scope *scopes;
	uint32_t nscopes, cap_scopes;
	struct root *roots; /* sorted by lo */
	uint32_t nroots;
	size_t bytes;
};

struct unit {
	struct dw_unit_ctx ctx;
	uint64_t end, die_offset, abbrev_offset, stmt_list;
	bool has_stmt_list, over_budget, broken;
	bool unread; /* known from .debug_aranges only: header and root not read yet */
	const char *comp_dir;
	struct unit_cache *cache;
	uint64_t last_use;
};

struct unit_range {
	uint64_t lo, hi;
	uint32_t unit;
};

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, cap;
	char *data;
};

struct range_buf {
	uint64_t (*r)[2];
	uint32_t n, cap;
};

struct dwarf_index {
	struct dwarf_sections s;
	struct unit *units;
	uint32_t nunits, cap_units;
	struct unit_range *ranges;
	uint32_t nranges, cap_ranges;
	size_t budget, bytes, peak, cache_bytes;
	uint64_t decoded_bytes; /* decoded since creation: caps the work of evicting and decoding again */
	bool thrashing;
	uint64_t clock;
	struct range_buf scratch;
	struct arena_chunk *chunks;
	const char **paths; /* open-addressing set of interned paths */
	uint32_t npaths, cap_paths;
};

static void account(struct dwarf_index *ix, size_t add, size_t sub)
{
	ix->bytes = ix->bytes + add - sub;
	if (ix->bytes > ix->peak)
		ix->peak = ix->bytes;
}

static bool fits(const struct dwarf_index *ix, size_t add) { return add <= ix->budget - ix->bytes; }

/* ---- sections produced on demand (dwarf_sections.load) ---- */

/* Makes [off, off + len) of a section readable (clipped to its size). */
static bool need(const struct dwarf_sections *s, enum dwarf_section_id which, size_t size,
		 uint64_t off, uint64_t len)
{
	if (s->load == NULL)
		return true;
	if (off >= size)
		return false;
	if (len > size - off)
		len = size - off;
	return s->load(s->load_ctx, which, off, len);
}

/* Makes a length-prefixed unit (of .debug_info or .debug_line) at `off` readable. */
static bool need_unit(const struct dwarf_sections *s, enum dwarf_section_id which,
		      const uint8_t *data, size_t size, uint64_t off)
{
	if (s->load == NULL)
		return true;
	if (!need(s, which, size, off, 12))
		return false;
	struct dw_cursor c;
	unsigned offset_size;
	dw_cursor_init(&c, data, size, (size_t)off);
	uint64_t len = dw_unit_length(&c, &offset_size);
	if (!c.ok || len > c.end - c.pos)
		return false;
	return need(s, which, size, off, c.pos - off + len);
}

/* Makes the abbreviation table at `offset` readable: it has no length, so
 * windows four times larger are loaded until one holds its end. */
static bool need_abbrevs(const struct dwarf_sections *s, uint64_t offset)
{
	if (s->load == NULL)
		return true;
	uint64_t window = 4096;
	for (uint32_t round = 0; round < 24 && offset < s->abbrev_size; round++, window *= 4) {
		uint64_t end = s->abbrev_size - offset < window ? s->abbrev_size : offset + window;
		if (!need(s, DWARF_SEC_ABBREV, s->abbrev_size, offset, end - offset))
			return false;
		struct dw_cursor c;
		dw_cursor_init(&c, s->abbrev, (size_t)end, (size_t)offset);
		/* Each declaration takes at least four bytes. */
		while (c.ok && c.pos < c.end) {
			uint64_t code = dw_uleb(&c);
			if (c.ok && code == 0)
				return true;
			(void)dw_uleb(&c);
			(void)dw_u8(&c);
			for (uint32_t i = 0; i <= MAX_ATTRS && c.ok; i++) {
				uint64_t name = dw_uleb(&c), form = dw_uleb(&c);
				if (form == DW_FORM_implicit_const)
					(void)dw_sleb(&c);
				if (name == 0 && form == 0)
					break;
			}
		}
		if (end == s->abbrev_size)
			return true; /* the whole section: the parser judges it */
	}
	return false;
}

/* Grows an index-level array, counting it against the budget. */
static bool grow_array(struct dwarf_index *ix, void **arr, uint32_t *cap, uint32_t need, size_t size)
{
	if (need <= *cap)
		return true;
	uint32_t ncap = *cap ? *cap : 64;
	while (ncap < need && ncap < UINT32_MAX / 4)
		ncap *= 2;
	if (ncap < need || !fits(ix, (size_t)(ncap - *cap) * size))
		return false;
	void *n = rt_realloc(*arr, (size_t)ncap * size);
	if (n == NULL)
		return false;
	account(ix, (size_t)(ncap - *cap) * size, 0);
	*arr = n;
	*cap = ncap;
	return true;
}

/* The declaration of abbreviation `code` after its code: tag, children
 * flag and where its attribute specifications start, which it skips. */
static void abbrev_decl_read(struct dw_cursor *c, uint64_t code, struct abbrev *out)
{
	out->code = code;
	out->tag = dw_uleb(c);
	out->children = dw_u8(c) != 0;
	out->specs = c->pos;
	for (uint32_t i = 0; i <= MAX_ATTRS; i++) {
		uint64_t name = dw_uleb(c), form = dw_uleb(c);
		if (form == DW_FORM_implicit_const)
			(void)dw_sleb(c);
		if (!c->ok || (name == 0 && form == 0))
			break;
	}
}

/* Finds abbreviation `code` in the table at `offset` by scanning (no allocation). */
static bool abbrev_scan(const struct dwarf_sections *s, uint64_t offset, uint64_t code,
			struct abbrev *out)
{
	struct dw_cursor c;
	if (offset >= s->abbrev_size || !need_abbrevs(s, offset))
		return false;
	dw_cursor_init(&c, s->abbrev, s->abbrev_size, (size_t)offset);
	/* Each declaration takes at least four bytes. */
	while (c.ok && c.pos < c.end) {
		uint64_t k = dw_uleb(&c);
		if (k == 0)
			return false;
		abbrev_decl_read(&c, k, out);
		if (c.ok && k == code)
			return true;
	}
	return false;
}

static bool abbrev_table_load(struct dwarf_index *ix, uint64_t offset, size_t max_bytes,
			      struct abbrev_table *t, bool *too_big)
{
	rt_memset(t, 0, sizeof(*t));
	*too_big = false;
	uint32_t cap = 0;
	struct dw_cursor c;
	if (offset >= ix->s.abbrev_size || !need_abbrevs(&ix->s, offset))
		return false;
	dw_cursor_init(&c, ix->s.abbrev, ix->s.abbrev_size, (size_t)offset);
	t->dense = true;
	while (c.ok && c.pos < c.end) {
		uint64_t code = dw_uleb(&c);
		if (code == 0)
			break;
		if (t->n == cap) {
			uint32_t ncap = cap ? cap * 2 : 64;
			if (ncap > UINT32_MAX / 2 || (size_t)ncap * sizeof(*t->decls) > max_bytes) {
				*too_big = true;
				goto fail;
			}
			struct abbrev *n = rt_realloc(t->decls, (size_t)ncap * sizeof(*n));
			if (n == NULL) {
				*too_big = true;
				goto fail;
			}
			t->decls = n;
			cap = ncap;
		}
		abbrev_decl_read(&c, code, &t->decls[t->n]);
		if (code != (uint64_t)t->n + 1)
			t->dense = false;
		t->n++;
	}
	if (!c.ok)
		goto fail;
	return true;
fail:
	rt_free(t->decls);
	rt_memset(t, 0, sizeof(*t));
	return false;
}

static const struct abbrev *abbrev_get(const struct abbrev_table *t, uint64_t code)
{
	if (t->dense)
		return code >= 1 && code <= t->n ? &t->decls[code - 1] : NULL;
	for (uint32_t i = 0; i < t->n; i++) {
		if (t->decls[i].code == code)
			return &t->decls[i];
	}
	return NULL;
}

/* Reads the attributes of one entry whose abbreviation is `a`. */
static bool read_die(const struct dwarf_sections *s, const struct dw_unit_ctx *u,
		     const struct abbrev *a, struct dw_cursor *c, struct die *d)
{
	struct dw_cursor ac;
	rt_memset(d, 0, sizeof(*d));
	d->tag = a->tag;
	d->children = a->children;
	dw_cursor_init(&ac, s->abbrev, s->abbrev_size, a->specs);
	for (uint32_t i = 0; i < MAX_ATTRS; i++) {
		uint64_t name = dw_uleb(&ac), form = dw_uleb(&ac);
		int64_t implicit = form == DW_FORM_implicit_const ? dw_sleb(&ac) : 0;
		if (!ac.ok)
			return false;
		if (name == 0 && form == 0)
			return c->ok;
		struct dw_val v;
		if (!dw_read_form(c, u, form, implicit, &v))
			return false;
		switch (name) {
		case DW_AT_low_pc: d->low_pc = v; break;
		case DW_AT_high_pc: d->high_pc = v; break;
		case DW_AT_ranges: d->ranges = v; break;
		case DW_AT_call_file: d->call_file = v; break;
		case DW_AT_call_line: d->call_line = v; break;
		case DW_AT_abstract_origin: d->origin = v; break;
		case DW_AT_specification: d->spec = v; break;
		case DW_AT_name: d->name = v; break;
		case DW_AT_linkage_name:
		case DW_AT_MIPS_linkage_name: d->linkage = v; break;
		case DW_AT_stmt_list: d->stmt_list = v; break;
		case DW_AT_comp_dir: d->comp_dir = v; break;
		case DW_AT_str_offsets_base: d->str_offsets_base = v; break;
		case DW_AT_addr_base:
		case DW_AT_GNU_addr_base: d->addr_base = v; break;
		case DW_AT_rnglists_base: d->rnglists_base = v; break;
		default: break;
		}
	}
	return false;
}

/* ---- addresses and ranges ---- */

static bool val_addr(const struct dwarf_sections *s, const struct dw_unit_ctx *u,
		     const struct dw_val *v, uint64_t *out)
{
	if (v->kind == DV_ADDR) {
		*out = v->u;
		return true;
	}
	if (v->kind != DV_ADDRX || u->addr_size == 0)
		return false;
	uint64_t base = u->has_addr_base ? u->addr_base : 8;
	if (v->u > (UINT64_MAX - base) / u->addr_size)
		return false;
	struct dw_cursor c;
	uint64_t at = base + v->u * u->addr_size;
	if (at > s->addr_size)
		return false;
	dw_cursor_init(&c, s->addr, s->addr_size, (size_t)at);
	*out = dw_fixed(&c, u->addr_size);
	return c.ok;
}

static bool range_add(struct range_buf *b, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return true;
	if (b->n == b->cap) {
		if (b->cap >= MAX_RANGES)
			return false;
		uint32_t ncap = b->cap ? b->cap * 2 : 16;
		void *n = rt_realloc(b->r, (size_t)ncap * sizeof(*b->r));
		if (n == NULL)
			return false;
		b->r = n;
		b->cap = ncap;
	}
	b->r[b->n][0] = lo;
	b->r[b->n][1] = hi;
	b->n++;
	return true;
}

/* DWARF 2-4 .debug_ranges list at `off`. */
static void ranges_v4(const struct dwarf_sections *s, const struct dw_unit_ctx *u, uint64_t off,
		      uint64_t base, struct range_buf *b)
{
	struct dw_cursor c;
	uint64_t all = u->addr_size == 4 ? 0xffffffffull : ~0ull;
	if (off >= s->ranges_size || (u->addr_size != 4 && u->addr_size != 8))
		return;
	dw_cursor_init(&c, s->ranges, s->ranges_size, (size_t)off);
	for (uint32_t i = 0; i < MAX_RANGES * 2 && c.ok; i++) {
		uint64_t lo = dw_fixed(&c, u->addr_size), hi = dw_fixed(&c, u->addr_size);
		if (!c.ok || (lo == 0 && hi == 0))
			return;
		if (lo == all)
			base = hi;
		else if (!range_add(b, base + lo, base + hi))
			return;
	}
}

/* DWARF 5 .debug_rnglists list at `off`. */
static void ranges_v5(const struct dwarf_sections *s, const struct dw_unit_ctx *u, uint64_t off,
		      uint64_t base, struct range_buf *b)
{
	struct dw_cursor c;
	if (off >= s->rnglists_size)
		return;
	dw_cursor_init(&c, s->rnglists, s->rnglists_size, (size_t)off);
	for (uint32_t i = 0; i < MAX_RANGES * 2 && c.ok; i++) {
		uint8_t kind = dw_u8(&c);
		struct dw_val x = {DV_ADDRX, 0, NULL}, y = {DV_ADDRX, 0, NULL};
		uint64_t lo = 0, hi = 0;
		switch (kind) {
		case DW_RLE_end_of_list:
			return;
		case DW_RLE_base_addressx:
			x.u = dw_uleb(&c);
			if (!val_addr(s, u, &x, &base))
				return;
			continue;
		case DW_RLE_startx_endx:
			x.u = dw_uleb(&c);
			y.u = dw_uleb(&c);
			if (!val_addr(s, u, &x, &lo) || !val_addr(s, u, &y, &hi))
				return;
			break;
		case DW_RLE_startx_length:
			x.u = dw_uleb(&c);
			if (!val_addr(s, u, &x, &lo))
				return;
			hi = lo + dw_uleb(&c);
			break;
		case DW_RLE_offset_pair:
			lo = base + dw_uleb(&c);
			hi = base + dw_uleb(&c);
			break;
		case DW_RLE_base_address:
			base = dw_fixed(&c, u->addr_size);
			continue;
		case DW_RLE_start_end:
			lo = dw_fixed(&c, u->addr_size);
			hi = dw_fixed(&c, u->addr_size);
			break;
		case DW_RLE_start_length:
			lo = dw_fixed(&c, u->addr_size);
			hi = lo + dw_uleb(&c);
			break;
		default:
			return;
		}
		if (!c.ok || !range_add(b, lo, hi))
			return;
	}
}

/* The address ranges of entry d into b (emptied first); base is the unit's base address. */
static void die_ranges(const struct dwarf_sections *s, const struct dw_unit_ctx *u,
		       const struct die *d, uint64_t base, struct range_buf *b)
{
	uint64_t lo, hi;
	b->n = 0;
	if (d->low_pc.kind != DV_NONE && d->high_pc.kind != DV_NONE && val_addr(s, u, &d->low_pc, &lo)) {
		if (d->high_pc.kind == DV_CONST)
			(void)range_add(b, lo, lo + d->high_pc.u);
		else if (val_addr(s, u, &d->high_pc, &hi))
			(void)range_add(b, lo, hi);
		return;
	}
	uint64_t off;
	if (d->ranges.kind == DV_RNGLISTX) {
		if (!u->has_rnglists_base || d->ranges.u > UINT64_MAX / 8)
			return;
		struct dw_cursor c;
		uint64_t at = u->rnglists_base + d->ranges.u * u->offset_size;
		if (at > s->rnglists_size)
			return;
		dw_cursor_init(&c, s->rnglists, s->rnglists_size, (size_t)at);
		off = u->rnglists_base + dw_fixed(&c, u->offset_size);
		if (!c.ok)
			return;
	} else if (d->ranges.kind == DV_SECOFF || d->ranges.kind == DV_CONST) {
		off = d->ranges.u;
	} else {
		return;
	}
	if (u->version >= 5)
		ranges_v5(s, u, off, base, b);
	else
		ranges_v4(s, u, off, base, b);
}

/* ---- the unit table ---- */

static bool val_offset(const struct dw_val *v, uint64_t *out)
{
	if (v->kind != DV_SECOFF && v->kind != DV_CONST)
		return false;
	*out = v->u;
	return true;
}

/* Reads the header and root entry of the unit at `pos`; *next is the following unit. */
static bool unit_read(struct dwarf_index *ix, size_t pos, size_t *next, struct unit *u,
		      struct die *root)
{
	const struct dwarf_sections *s = &ix->s;
	struct dw_cursor c;
	unsigned offset_size;
	rt_memset(u, 0, sizeof(*u));
	*next = 0;
	if (!need_unit(s, DWARF_SEC_INFO, s->info, s->info_size, pos))
		return false;
	dw_cursor_init(&c, s->info, s->info_size, pos);
	uint64_t len = dw_unit_length(&c, &offset_size);
	if (!c.ok || len > c.end - c.pos || len < 7)
		return false;
	*next = c.pos + (size_t)len;
	u->end = *next;
	u->ctx.offset = pos;
	u->ctx.offset_size = (uint8_t)offset_size;
	u->ctx.version = (uint8_t)dw_fixed(&c, 2);
	if (u->ctx.version < 2 || u->ctx.version > 5)
		return false;
	if (u->ctx.version >= 5) {
		uint8_t type = dw_u8(&c);
		u->ctx.addr_size = dw_u8(&c);
		u->abbrev_offset = dw_fixed(&c, offset_size);
		if (type != DW_UT_compile && type != DW_UT_partial)
			return false; /* type, skeleton and split units are not read */
	} else {
		u->abbrev_offset = dw_fixed(&c, offset_size);
		u->ctx.addr_size = dw_u8(&c);
	}
	if (!c.ok || (u->ctx.addr_size != 4 && u->ctx.addr_size != 8))
		return false;
	c.end = u->end;
	u->die_offset = c.pos;
	uint64_t code = dw_uleb(&c);
	struct abbrev a;
	if (!c.ok || code == 0 || !abbrev_scan(s, u->abbrev_offset, code, &a) ||
	    !read_die(s, &u->ctx, &a, &c, root))
		return false;
	/* The bases first: the other values of the root may depend on them. */
	u->ctx.has_str_offsets_base = val_offset(&root->str_offsets_base, &u->ctx.str_offsets_base);
	u->ctx.has_addr_base = val_offset(&root->addr_base, &u->ctx.addr_base);
	u->ctx.has_rnglists_base = val_offset(&root->rnglists_base, &u->ctx.rnglists_base);
	u->has_stmt_list = val_offset(&root->stmt_list, &u->stmt_list);
	u->comp_dir = dw_val_string(s, &u->ctx, &root->comp_dir);
	return true;
}

static bool range_before(const void *a, const void *b)
{
	const struct unit_range *x = a, *y = b;
	return x->lo < y->lo || (x->lo == y->lo && x->hi < y->hi);
}

/* Adds a unit at .debug_info offset `off` whose header is read on first use. */
static bool add_unread_unit(struct dwarf_index *ix, uint64_t off)
{
	void *arr = ix->units;
	if (!grow_array(ix, &arr, &ix->cap_units, ix->nunits + 1, sizeof(*ix->units)))
		return false;
	ix->units = arr;
	struct unit *u = &ix->units[ix->nunits++];
	rt_memset(u, 0, sizeof(*u));
	u->ctx.offset = off;
	u->unread = true;
	return true;
}

static bool add_range(struct dwarf_index *ix, uint64_t lo, uint64_t hi, uint32_t unit)
{
	void *arr = ix->ranges;
	if (!grow_array(ix, &arr, &ix->cap_ranges, ix->nranges + 1, sizeof(*ix->ranges)))
		return false;
	ix->ranges = arr;
	struct unit_range *r = &ix->ranges[ix->nranges++];
	r->lo = lo;
	r->hi = hi;
	r->unit = unit;
	return true;
}

/* The unit table from .debug_aranges: one unit per set, in .debug_info
 * order.  False (and nothing kept) if the sets are not in that order or
 * are malformed; the caller then reads every unit header. */
static bool units_from_aranges(struct dwarf_index *ix)
{
	const struct dwarf_sections *s = &ix->s;
	size_t pos = 0;
	bool ok = true;
	/* Each set takes at least sixteen bytes. */
	while (ok && s->aranges_size - pos >= 16) {
		struct dw_cursor c;
		unsigned offset_size;
		dw_cursor_init(&c, s->aranges, s->aranges_size, pos);
		uint64_t len = dw_unit_length(&c, &offset_size);
		if (!c.ok || len > c.end - c.pos || len < 4) {
			ok = false;
			break;
		}
		size_t next = c.pos + (size_t)len;
		c.end = next;
		uint16_t version = (uint16_t)dw_fixed(&c, 2);
		uint64_t info_off = dw_fixed(&c, offset_size);
		uint8_t addr_size = dw_u8(&c), seg_size = dw_u8(&c);
		if (!c.ok || version != 2 || (addr_size != 4 && addr_size != 8) || seg_size != 0 ||
		    info_off >= s->info_size ||
		    (ix->nunits > 0 && info_off <= ix->units[ix->nunits - 1].ctx.offset)) {
			ok = false;
			break;
		}
		/* Tuples start at a multiple of their size from the set's start. */
		size_t tuple = 2u * addr_size, skip = (tuple - (c.pos - pos) % tuple) % tuple;
		(void)dw_skip(&c, skip);
		ok = add_unread_unit(ix, info_off);
		/* Each tuple takes at least eight bytes. */
		while (ok && c.ok && c.end - c.pos >= tuple) {
			uint64_t lo = dw_fixed(&c, addr_size), n = dw_fixed(&c, addr_size);
			if (lo == 0 && n == 0)
				break;
			if (n > 0 && lo + n > lo)
				ok = add_range(ix, lo, lo + n, ix->nunits - 1);
		}
		pos = next;
	}
	if (!ok || ix->nunits == 0) {
		account(ix, 0, (size_t)ix->cap_units * sizeof(*ix->units) +
				       (size_t)ix->cap_ranges * sizeof(*ix->ranges));
		rt_free(ix->units);
		rt_free(ix->ranges);
		ix->units = NULL;
		ix->ranges = NULL;
		ix->nunits = ix->cap_units = ix->nranges = ix->cap_ranges = 0;
		return false;
	}
	return true;
}

/* Reads the header and root entry of a unit known from .debug_aranges. */
static bool unit_ready(struct dwarf_index *ix, struct unit *u)
{
	if (!u->unread)
		return !u->broken;
	u->unread = false;
	struct unit read;
	struct die root;
	size_t next;
	if (!unit_read(ix, (size_t)u->ctx.offset, &next, &read, &root)) {
		u->broken = true;
		return false;
	}
	read.last_use = u->last_use;
	*u = read;
	return true;
}

struct dwarf_index *dwarf_index_new(const struct dwarf_sections *s, size_t budget)
{
	if (s->info == NULL || s->info_size == 0 || s->abbrev == NULL)
		return NULL;
	struct dwarf_index *ix = rt_calloc(1, sizeof(*ix));
	if (ix == NULL)
		return NULL;
	ix->s = *s;
	ix->budget = budget;
	account(ix, sizeof(*ix), 0);
	size_t pos = 0, next = 0;
	bool ok = true;
	if (s->load != NULL && s->aranges_size > 0 && units_from_aranges(ix))
		pos = s->info_size; /* the unit table is built */
	/* Each unit takes at least eleven bytes, so the loop is bounded. */
	while (ok && pos + 11 <= s->info_size) {
		struct unit u;
		struct die root;
		if (!unit_read(ix, pos, &next, &u, &root)) {
			if (next <= pos)
				break; /* cannot find the next unit */
			pos = next;
			continue;
		}
		pos = next;
		uint64_t base = 0;
		if (root.low_pc.kind != DV_NONE)
			(void)val_addr(s, &u.ctx, &root.low_pc, &base);
		die_ranges(s, &u.ctx, &root, base, &ix->scratch);
		if (ix->scratch.n == 0)
			continue; /* no code */
		void *arr = ix->units;
		if (!grow_array(ix, &arr, &ix->cap_units, ix->nunits + 1, sizeof(*ix->units))) {
			ok = false;
			break;
		}
		ix->units = arr;
		ix->units[ix->nunits] = u;
		arr = ix->ranges;
		if (!grow_array(ix, &arr, &ix->cap_ranges, ix->nranges + ix->scratch.n,
				sizeof(*ix->ranges))) {
			ok = false;
			break;
		}
		ix->ranges = arr;
		for (uint32_t i = 0; i < ix->scratch.n; i++) {
			struct unit_range *r = &ix->ranges[ix->nranges++];
			r->lo = ix->scratch.r[i][0];
			r->hi = ix->scratch.r[i][1];
			r->unit = ix->nunits;
		}
		ix->nunits++;
	}
	if (!ok || ix->nunits == 0 || ix->nranges == 0) {
		dwarf_index_free(ix);
		return NULL;
	}
	rt_sort(ix->ranges, ix->nranges, sizeof(*ix->ranges), range_before);
	return ix;
}

/* ---- per-unit caches ---- */

static void cache_free(struct dwarf_index *ix, struct unit *u)
{
	struct unit_cache *k = u->cache;
	if (k == NULL)
		return;
	rt_free(k->abbrevs.decls);
	dw_line_free(&k->lines);
	rt_free(k->scopes);
	rt_free(k->roots);
	account(ix, 0, k->bytes);
	ix->cache_bytes -= k->bytes;
	rt_free(k);
	u->cache = NULL;
}

/* Evicts the least recently used caches, other than `keep`, until the
 * caches hold at most `target` bytes. */
static void evict_to(struct dwarf_index *ix, size_t target, const struct unit *keep)
{
	for (uint32_t round = 0; round < ix->nunits && ix->cache_bytes > target; round++) {
		struct unit *oldest = NULL;
		for (uint32_t i = 0; i < ix->nunits; i++) {
			struct unit *u = &ix->units[i];
			if (u->cache != NULL && u != keep && (oldest == NULL || u->last_use < oldest->last_use))
				oldest = u;
		}
		if (oldest == NULL)
			return;
		cache_free(ix, oldest);
	}
}

static size_t cache_bytes_of(const struct unit_cache *k)
{
	return sizeof(*k) + (size_t)k->abbrevs.n * sizeof(struct abbrev) + k->lines.bytes +
	       (size_t)k->cap_scopes * sizeof(struct scope) + (size_t)k->nroots * sizeof(struct root);
}

static bool root_before(const void *a, const void *b)
{
	return ((const struct root *)a)->lo < ((const struct root *)b)->lo;
}

/* The roots of the scope list: every range of every subprogram with the
 * block of scopes after it.  False when the budget ran out. */
static bool build_roots(struct unit_cache *k, size_t max_bytes)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < k->nscopes; i++)
		n += k->scopes[i].parent == NO_SCOPE;
	if (n == 0)
		return true;
	if (cache_bytes_of(k) + (size_t)n * sizeof(struct root) > max_bytes)
		return false;
	k->roots = rt_malloc((size_t)n * sizeof(struct root));
	if (k->roots == NULL)
		return false;
	for (uint32_t i = 0; i < k->nscopes;) {
		if (k->scopes[i].parent != NO_SCOPE) {
			i++;
			continue;
		}
		uint32_t ranges_end = i + 1;
		while (ranges_end < k->nscopes && k->scopes[ranges_end].parent == NO_SCOPE &&
		       k->scopes[ranges_end].die == k->scopes[i].die)
			ranges_end++;
		uint32_t block_end = ranges_end;
		while (block_end < k->nscopes && k->scopes[block_end].parent != NO_SCOPE)
			block_end++;
		for (uint32_t r = i; r < ranges_end; r++) {
			struct root *rt = &k->roots[k->nroots++];
			rt->lo = k->scopes[r].lo;
			rt->hi = k->scopes[r].hi;
			rt->begin = i;
			rt->end = block_end;
		}
		i = ranges_end;
	}
	rt_sort(k->roots, k->nroots, sizeof(*k->roots), root_before);
	return true;
}

static bool add_scope(struct unit_cache *k, size_t max_bytes, const struct scope *sc)
{
	if (k->nscopes == k->cap_scopes) {
		uint32_t ncap = k->cap_scopes ? k->cap_scopes * 2 : 256;
		if (ncap > UINT32_MAX / 4 ||
		    cache_bytes_of(k) + (size_t)(ncap - k->cap_scopes) * sizeof(*sc) > max_bytes)
			return false;
		struct scope *n = rt_realloc(k->scopes, (size_t)ncap * sizeof(*n));
		if (n == NULL)
			return false;
		k->scopes = n;
		k->cap_scopes = ncap;
	}
	k->scopes[k->nscopes++] = *sc;
	return true;
}

/* Walks the unit's entry tree with an explicit stack, recording the address
 * ranges of subprograms and inlined calls.  False when the budget ran out. */
static bool decode_scopes(struct dwarf_index *ix, struct unit *u, struct unit_cache *k,
			  size_t max_bytes)
{
	const struct dwarf_sections *s = &ix->s;
	uint32_t stack[MAX_DEPTH];
	uint32_t depth = 0;
	uint64_t base = 0;
	struct dw_cursor c;
	dw_cursor_init(&c, s->info, u->end, (size_t)u->die_offset);
	/* Every entry consumes at least one byte. */
	while (c.ok && c.pos < c.end) {
		uint64_t off = c.pos;
		uint64_t code = dw_uleb(&c);
		if (code == 0) {
			if (depth == 0)
				continue; /* padding */
			depth--;
			continue;
		}
		const struct abbrev *a = abbrev_get(&k->abbrevs, code);
		struct die d;
		if (a == NULL || !read_die(s, &u->ctx, a, &c, &d))
			return true; /* malformed: keep what was read */
		if (off == u->die_offset && d.low_pc.kind != DV_NONE)
			(void)val_addr(s, &u->ctx, &d.low_pc, &base);
		uint32_t parent = depth > 0 ? stack[depth - 1] : NO_SCOPE;
		uint32_t mine = parent;
		if (d.tag == DW_TAG_subprogram || d.tag == DW_TAG_inlined_subroutine) {
			/* A subprogram starts a new chain, even when nested. */
			if (d.tag == DW_TAG_subprogram)
				parent = NO_SCOPE;
			die_ranges(s, &u->ctx, &d, base, &ix->scratch);
			mine = d.tag == DW_TAG_subprogram ? NO_SCOPE : parent;
			if (ix->scratch.n > 0) {
				mine = k->nscopes;
				struct scope sc = {0};
				sc.die = off;
				sc.parent = parent;
				sc.depth = depth;
				sc.call_file = d.call_file.kind == DV_CONST ? (uint32_t)d.call_file.u : 0;
				sc.call_line = d.call_line.kind == DV_CONST ? (uint32_t)d.call_line.u : 0;
				for (uint32_t i = 0; i < ix->scratch.n; i++) {
					sc.lo = ix->scratch.r[i][0];
					sc.hi = ix->scratch.r[i][1];
					if (!add_scope(k, max_bytes, &sc))
						return false;
				}
			}
		}
		if (d.children) {
			if (depth >= MAX_DEPTH)
				return true; /* too deep: keep what was read */
			stack[depth++] = mine;
		}
	}
	return true;
}

enum decode_result { DECODED, DECODE_BROKEN, DECODE_TOO_BIG };

static enum decode_result decode_unit(struct dwarf_index *ix, struct unit *u, size_t max_bytes,
				      struct unit_cache **out)
{
	*out = NULL;
	if (max_bytes < sizeof(struct unit_cache))
		return DECODE_TOO_BIG;
	struct unit_cache *k = rt_calloc(1, sizeof(*k));
	if (k == NULL)
		return DECODE_TOO_BIG;
	bool too_big;
	if (!abbrev_table_load(ix, u->abbrev_offset, max_bytes / 2, &k->abbrevs, &too_big)) {
		rt_free(k);
		return too_big ? DECODE_TOO_BIG : DECODE_BROKEN;
	}
	size_t used = cache_bytes_of(k);
	if (u->has_stmt_list && used < max_bytes &&
	    need_unit(&ix->s, DWARF_SEC_LINE, ix->s.line, ix->s.line_size, u->stmt_list)) {
		k->has_lines = dw_line_decode(&ix->s, &u->ctx, u->stmt_list, u->comp_dir,
					      max_bytes - used, &k->lines);
		if (!k->has_lines && k->lines.over_budget) {
			rt_free(k->abbrevs.decls);
			rt_free(k);
			return DECODE_TOO_BIG;
		}
	}
	if (!decode_scopes(ix, u, k, max_bytes) || !build_roots(k, max_bytes)) {
		rt_free(k->abbrevs.decls);
		dw_line_free(&k->lines);
		rt_free(k->scopes);
		rt_free(k->roots);
		rt_free(k);
		return DECODE_TOO_BIG;
	}
	k->bytes = cache_bytes_of(k);
	*out = k;
	return DECODED;
}

/* The unit's cache, decoding it within the budget. */
static enum dwarf_lookup_status unit_cache_get(struct dwarf_index *ix, struct unit *u)
{
	u->last_use = ++ix->clock;
	if (u->cache != NULL)
		return DWARF_FOUND;
	if (u->over_budget || ix->thrashing)
		return DWARF_OVER_BUDGET;
	if (!unit_ready(ix, u))
		return DWARF_NOT_FOUND;
	size_t fixed = ix->bytes - ix->cache_bytes;
	if (fixed >= ix->budget)
		return DWARF_OVER_BUDGET;
	size_t room = ix->budget - fixed;
	/* Half the room for the caches already held, the rest for this one. */
	evict_to(ix, room / 2, u);
	struct unit_cache *k;
	enum decode_result r = decode_unit(ix, u, room - ix->cache_bytes, &k);
	if (r == DECODE_TOO_BIG && ix->cache_bytes > 0) {
		evict_to(ix, 0, u);
		r = decode_unit(ix, u, room, &k);
	}
	if (r == DECODE_TOO_BIG) {
		u->over_budget = true;
		return DWARF_OVER_BUDGET;
	}
	if (r == DECODE_BROKEN) {
		u->broken = true;
		return DWARF_NOT_FOUND;
	}
	u->cache = k;
	/* Units decoded again and again (a working set larger than the budget)
	 * would cost a decode per lookup: past eight budgets of decoding, the
	 * index stops decoding and lookups report the budget. */
	ix->decoded_bytes += k->bytes;
	if (ix->decoded_bytes > 8 * (uint64_t)ix->budget)
		ix->thrashing = true;
	ix->cache_bytes += k->bytes;
	account(ix, k->bytes, 0);
	return DWARF_FOUND;
}

/* ---- names and files ---- */

static struct unit *unit_of_die(struct dwarf_index *ix, uint64_t off)
{
	uint32_t lo = rt_upper_bound(ix->units, ix->nunits, sizeof(ix->units[0]),
				     offsetof(struct unit, ctx.offset), off);
	if (lo == 0)
		return NULL;
	struct unit *u = &ix->units[lo - 1];
	if (!unit_ready(ix, u))
		return NULL;
	return off >= u->die_offset && off < u->end ? u : NULL;
}

/* The linkage name of the entry at `off`, else its name, following
 * abstract_origin and specification links. */
static const char *die_name(struct dwarf_index *ix, uint64_t off)
{
	const char *fallback = NULL;
	for (uint32_t hop = 0; hop < MAX_ORIGIN_HOPS; hop++) {
		struct unit *u = unit_of_die(ix, off);
		if (u == NULL)
			break;
		struct dw_cursor c;
		dw_cursor_init(&c, ix->s.info, u->end, (size_t)off);
		uint64_t code = dw_uleb(&c);
		struct abbrev scanned;
		const struct abbrev *a = NULL;
		if (u->cache != NULL)
			a = abbrev_get(&u->cache->abbrevs, code);
		else if (abbrev_scan(&ix->s, u->abbrev_offset, code, &scanned))
			a = &scanned;
		struct die d;
		if (a == NULL || !read_die(&ix->s, &u->ctx, a, &c, &d))
			break;
		const char *link = dw_val_string(&ix->s, &u->ctx, &d.linkage);
		if (link != NULL && link[0])
			return link;
		const char *name = dw_val_string(&ix->s, &u->ctx, &d.name);
		if (fallback == NULL && name != NULL && name[0])
			fallback = name;
		const struct dw_val *next = d.origin.kind == DV_REF ? &d.origin
					    : d.spec.kind == DV_REF ? &d.spec
								    : NULL;
		if (next == NULL)
			break;
		off = next->u;
	}
	return fallback;
}

static uint32_t hash_str(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 16777619u;
	}
	return h;
}

/* A stable copy of the joined parts (a "/" between non-empty ones), shared
 * by equal strings; NULL when the budget or memory runs out. */
static const char *intern_path(struct dwarf_index *ix, const char *const parts[3])
{
	char buf[4096];
	char last = 0;
	size_t n = 0;
	for (uint32_t i = 0; i < 3; i++) {
		if (parts[i] == NULL || parts[i][0] == 0)
			continue;
		size_t len = rt_strlen(parts[i]);
		if (n > 0 && last != '/') {
			if (n + 1 >= sizeof(buf))
				return NULL;
			buf[n++] = '/';
		}
		if (len >= sizeof(buf) - n)
			return NULL;
		rt_memcpy(buf + n, parts[i], len);
		n += len;
		last = parts[i][len - 1];
	}
	if (n == 0)
		return NULL;
	buf[n] = 0;
	uint32_t h = hash_str(buf, n);
	if (ix->cap_paths > 0) {
		for (uint32_t i = 0; i < ix->cap_paths; i++) {
			const char *p = ix->paths[(h + i) & (ix->cap_paths - 1)];
			if (p == NULL)
				break;
			if (rt_streq(p, buf))
				return p;
		}
	}
	if (2 * (ix->npaths + 1) > ix->cap_paths) {
		uint32_t ncap = ix->cap_paths ? ix->cap_paths * 2 : 64;
		if (ncap > (1u << 24) || !fits(ix, (size_t)ncap * sizeof(char *)))
			return NULL;
		const char **np = rt_calloc(ncap, sizeof(char *));
		if (np == NULL)
			return NULL;
		for (uint32_t i = 0; i < ix->cap_paths; i++) {
			const char *p = ix->paths[i];
			if (p == NULL)
				continue;
			uint32_t ph = hash_str(p, rt_strlen(p));
			for (uint32_t j = 0; j < ncap; j++) {
				if (np[(ph + j) & (ncap - 1)] == NULL) {
					np[(ph + j) & (ncap - 1)] = p;
					break;
				}
			}
		}
		account(ix, (size_t)ncap * sizeof(char *), (size_t)ix->cap_paths * sizeof(char *));
		rt_free(ix->paths);
		ix->paths = np;
		ix->cap_paths = ncap;
	}
	struct arena_chunk *ch = ix->chunks;
	if (ch == NULL || ch->cap - ch->used < n + 1) {
		size_t cap = n + 1 > ARENA_CHUNK ? n + 1 : ARENA_CHUNK;
		if (!fits(ix, cap + sizeof(*ch)))
			return NULL;
		ch = rt_malloc(sizeof(*ch));
		char *data = rt_malloc(cap);
		if (ch == NULL || data == NULL) {
			rt_free(ch);
			rt_free(data);
			return NULL;
		}
		ch->data = data;
		ch->cap = cap;
		ch->used = 0;
		ch->next = ix->chunks;
		ix->chunks = ch;
		account(ix, cap + sizeof(*ch), 0);
	}
	char *p = ch->data + ch->used;
	rt_memcpy(p, buf, n + 1);
	ch->used += n + 1;
	for (uint32_t j = 0; j < ix->cap_paths; j++) {
		if (ix->paths[(h + j) & (ix->cap_paths - 1)] == NULL) {
			ix->paths[(h + j) & (ix->cap_paths - 1)] = p;
			break;
		}
	}
	ix->npaths++;
	return p;
}

static const char *file_name(struct dwarf_index *ix, const struct unit *u, uint32_t file)
{
	const struct unit_cache *k = u->cache;
	if (!k->has_lines || file >= k->lines.nfiles)
		return NULL;
	const struct dw_line_file *f = &k->lines.files[file];
	if (f->name == NULL)
		return NULL;
	const char *parts[3] = {NULL, NULL, f->name};
	if (f->name[0] != '/') {
		parts[1] = f->dir;
		if (f->dir == NULL || f->dir[0] != '/')
			parts[0] = u->comp_dir;
	}
	const char *p = intern_path(ix, parts);
	return p != NULL ? p : f->name;
}

/* ---- lookup ---- */

static struct unit *unit_of_addr(struct dwarf_index *ix, uint64_t addr)
{
	uint32_t lo = rt_upper_bound(ix->ranges, ix->nranges, sizeof(ix->ranges[0]),
				     offsetof(struct unit_range, lo), addr);
	/* A few back, in case ranges overlap (code the linker dropped sits at 0). */
	for (uint32_t i = lo, k = 0; i > 0 && k < 16; i--, k++) {
		const struct unit_range *r = &ix->ranges[i - 1];
		if (addr >= r->lo && addr < r->hi)
			return &ix->units[r->unit];
	}
	return NULL;
}

bool dwarf_unit_offset(struct dwarf_index *ix, uint64_t addr, uint64_t *info_offset)
{
	const struct unit *u = unit_of_addr(ix, addr);
	if (u == NULL)
		return false;
	*info_offset = u->ctx.offset;
	return true;
}

uint64_t dwarf_decode_pending(struct dwarf_index *ix, uint64_t addr)
{
	const struct unit *u = unit_of_addr(ix, addr);
	if (u == NULL || u->cache != NULL || u->over_budget || u->broken || ix->thrashing)
		return 0;
	uint64_t end = u->end;
	if (u->unread) {
		/* Units are sorted by offset: one not read yet ends where the next starts. */
		size_t i = (size_t)(u - ix->units);
		end = i + 1 < ix->nunits ? ix->units[i + 1].ctx.offset : ix->s.info_size;
	}
	return end > u->ctx.offset ? end - u->ctx.offset : 0;
}

enum dwarf_lookup_status dwarf_lookup(struct dwarf_index *ix, uint64_t addr,
				      struct dwarf_frame frames[DWARF_MAX_FRAMES], uint32_t *n)
{
	*n = 0;
	struct unit *u = unit_of_addr(ix, addr);
	if (u == NULL)
		return DWARF_NOT_FOUND;
	enum dwarf_lookup_status st = unit_cache_get(ix, u);
	if (st != DWARF_FOUND)
		return st;
	const struct unit_cache *k = u->cache;
	uint32_t file = 0, line = 0;
	bool has_line = k->has_lines && dw_line_find(&k->lines, addr, &file, &line);
	/* The deepest scope containing addr, in the blocks of the subprogram
	 * ranges that contain it. */
	uint32_t best = NO_SCOPE;
	uint32_t lo = rt_upper_bound(k->roots, k->nroots, sizeof(k->roots[0]), offsetof(struct root, lo),
				     addr);
	for (uint32_t r = lo, back = 0; r > 0 && back < 16; r--, back++) {
		const struct root *rt = &k->roots[r - 1];
		if (addr < rt->lo || addr >= rt->hi)
			continue;
		for (uint32_t i = rt->begin; i < rt->end; i++) {
			const struct scope *sc = &k->scopes[i];
			if (addr >= sc->lo && addr < sc->hi &&
			    (best == NO_SCOPE || sc->depth >= k->scopes[best].depth))
				best = i;
		}
	}
	if (best == NO_SCOPE && !has_line)
		return DWARF_NOT_FOUND;
	frames[0].name = NULL;
	frames[0].file = has_line ? file_name(ix, u, file) : NULL;
	frames[0].line = has_line ? line : 0;
	uint32_t count = 1;
	for (uint32_t hop = 0, sc = best; sc != NO_SCOPE && hop < MAX_DEPTH; hop++) {
		const struct scope *s = &k->scopes[sc];
		frames[count - 1].name = die_name(ix, s->die);
		if (s->parent == NO_SCOPE || s->parent >= k->nscopes)
			break;
		/* Keep the innermost frames and the outermost one. */
		if (count < DWARF_MAX_FRAMES)
			count++;
		frames[count - 1].file = file_name(ix, u, s->call_file);
		frames[count - 1].line = s->call_line;
		sc = s->parent;
	}
	*n = count;
	return DWARF_FOUND;
}

size_t dwarf_index_bytes(const struct dwarf_index *ix) { return ix->bytes; }
size_t dwarf_index_peak_bytes(const struct dwarf_index *ix) { return ix->peak; }

void dwarf_index_free(struct dwarf_index *ix)
{
	if (ix == NULL)
		return;
	for (uint32_t i = 0; i < ix->nunits; i++)
		cache_free(ix, &ix->units[i]);
	rt_free(ix->units);
	rt_free(ix->ranges);
	rt_free(ix->scratch.r);
	rt_free(ix->paths);
	for (struct arena_chunk *ch = ix->chunks; ch != NULL;) {
		struct arena_chunk *next = ch->next;
		rt_free(ch->data);
		rt_free(ch);
		ch = next;
	}
	rt_free(ix);
}
