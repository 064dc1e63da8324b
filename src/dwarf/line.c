/* .debug_line: the line number program of one unit (DWARF 2 to 5). */
#include "dwarf/internal.h"

#include "rt/rt.h"
#include "rt/search.h"

enum {
	DW_LNS_copy = 1, DW_LNS_advance_pc, DW_LNS_advance_line, DW_LNS_set_file,
	DW_LNS_set_column, DW_LNS_negate_stmt, DW_LNS_set_basic_block, DW_LNS_const_add_pc,
	DW_LNS_fixed_advance_pc, DW_LNS_set_prologue_end, DW_LNS_set_epilogue_begin,
	DW_LNS_set_isa,
};
enum { DW_LNE_end_sequence = 1, DW_LNE_set_address = 2, DW_LNE_define_file = 3 };
enum { DW_LNCT_path = 1, DW_LNCT_directory_index = 2 };

/* Files and directories above these counts are malformed for our purposes. */
#define MAX_DIRS 65536u
#define MAX_FILES 1048576u
#define MAX_FORMATS 32u

struct line_builder {
	struct dw_line_table *t;
	uint32_t cap_rows, cap_seqs, cap_files;
	const char **dirs;
	uint32_t ndirs;
	size_t max_bytes;
	bool failed;
};

static size_t table_bytes(const struct line_builder *b)
{
	return (size_t)b->cap_rows * sizeof(struct dw_line_row) +
	       (size_t)b->cap_seqs * sizeof(struct dw_line_seq) +
	       (size_t)b->cap_files * sizeof(struct dw_line_file) + (size_t)b->ndirs * sizeof(char *);
}

/* Grows *arr (element size `size`) to hold need elements, within the budget. */
static bool grow(struct line_builder *b, void **arr, uint32_t *cap, uint32_t need, size_t size)
{
	if (need <= *cap)
		return true;
	uint32_t ncap = *cap ? *cap : 64;
	while (ncap < need && ncap < UINT32_MAX / 2)
		ncap *= 2;
	if (ncap < need || table_bytes(b) + (size_t)(ncap - *cap) * size > b->max_bytes) {
		b->t->over_budget = true;
		b->failed = true;
		return false;
	}
	void *n = rt_realloc(*arr, (size_t)ncap * size);
	if (n == NULL) {
		b->failed = true;
		return false;
	}
	*arr = n;
	*cap = ncap;
	return true;
}

static bool add_file(struct line_builder *b, const char *dir, const char *name)
{
	struct dw_line_table *t = b->t;
	void *arr = t->files;
	if (t->nfiles >= MAX_FILES || !grow(b, &arr, &b->cap_files, t->nfiles + 1, sizeof(*t->files)))
		return false;
	t->files = arr;
	t->files[t->nfiles].dir = dir;
	t->files[t->nfiles].name = name;
	t->nfiles++;
	return true;
}

static bool add_row(struct line_builder *b, uint64_t addr, uint32_t file, uint32_t line)
{
	struct dw_line_table *t = b->t;
	void *arr = t->rows;
	if (!grow(b, &arr, &b->cap_rows, t->nrows + 1, sizeof(*t->rows)))
		return false;
	t->rows = arr;
	t->rows[t->nrows].addr = addr;
	t->rows[t->nrows].file = file;
	t->rows[t->nrows].line = line;
	t->nrows++;
	return true;
}

static bool add_seq(struct line_builder *b, uint32_t first, uint64_t end_addr)
{
	struct dw_line_table *t = b->t;
	if (first >= t->nrows)
		return true; /* an empty sequence */
	uint64_t lo = t->rows[first].addr;
	if (end_addr <= lo)
		return true;
	void *arr = t->seqs;
	if (!grow(b, &arr, &b->cap_seqs, t->nseqs + 1, sizeof(*t->seqs)))
		return false;
	t->seqs = arr;
	struct dw_line_seq *q = &t->seqs[t->nseqs++];
	q->lo = lo;
	q->hi = end_addr;
	q->first = first;
	q->count = t->nrows - first;
	return true;
}

/* DWARF 5 directory or file entry list: formats, then count entries. */
static bool read_entries_v5(struct line_builder *b, struct dw_cursor *c, const struct dwarf_sections *s,
			    const struct dw_unit_ctx *u, bool files)
{
	uint8_t nformats = dw_u8(c);
	uint64_t types[MAX_FORMATS], forms[MAX_FORMATS];
	if (nformats > MAX_FORMATS)
		return false;
	for (uint32_t i = 0; i < nformats; i++) {
		types[i] = dw_uleb(c);
		forms[i] = dw_uleb(c);
	}
	uint64_t count = dw_uleb(c);
	if (!c->ok || count > (files ? MAX_FILES : MAX_DIRS))
		return false;
	if (!files) {
		if (b->max_bytes < count * sizeof(char *))
			return false;
		b->dirs = rt_calloc(count + 1, sizeof(char *));
		if (b->dirs == NULL)
			return false;
		b->ndirs = (uint32_t)count;
	}
	for (uint64_t i = 0; i < count; i++) {
		const char *path = NULL;
		uint64_t dir = 0;
		for (uint32_t k = 0; k < nformats; k++) {
			struct dw_val v;
			if (!dw_read_form(c, u, forms[k], 0, &v))
				return false;
			if (types[k] == DW_LNCT_path)
				path = dw_val_string(s, u, &v);
			else if (types[k] == DW_LNCT_directory_index && v.kind == DV_CONST)
				dir = v.u;
		}
		if (!files) {
			b->dirs[i] = path;
		} else if (!add_file(b, dir < b->ndirs ? b->dirs[dir] : NULL, path)) {
			return false;
		}
	}
	return c->ok;
}

/* DWARF 2-4: include_directories then file_names, each ended by an empty string. */
static bool read_entries_v4(struct line_builder *b, struct dw_cursor *c, const char *comp_dir)
{
	size_t start = c->pos;
	uint32_t n = 0;
	for (const char *d = dw_cstr(c); d != NULL && d[0] != 0 && n < MAX_DIRS; d = dw_cstr(c))
		n++;
	if (!c->ok || b->max_bytes < (size_t)(n + 1) * sizeof(char *))
		return false;
	b->dirs = rt_calloc((size_t)n + 2, sizeof(char *));
	if (b->dirs == NULL)
		return false;
	b->ndirs = n + 1;
	b->dirs[0] = comp_dir;
	c->pos = start;
	for (uint32_t i = 1; i <= n; i++)
		b->dirs[i] = dw_cstr(c);
	(void)dw_cstr(c); /* the terminator */
	/* File numbers start at 1: entry 0 is a placeholder. */
	if (!add_file(b, NULL, NULL))
		return false;
	for (uint32_t i = 0; i < MAX_FILES; i++) {
		const char *name = dw_cstr(c);
		if (name == NULL || name[0] == 0)
			break;
		uint64_t dir = dw_uleb(c);
		(void)dw_uleb(c); /* mtime */
		(void)dw_uleb(c); /* length */
		if (!add_file(b, dir < b->ndirs ? b->dirs[dir] : NULL, name))
			return false;
	}
	return c->ok;
}

struct line_header {
	uint8_t version;
	uint8_t min_inst_length, default_is_stmt, line_range, opcode_base;
	int8_t line_base;
	uint8_t std_lengths[256];
	size_t program, end;
};

static bool read_header(struct line_builder *b, struct dw_cursor *c, const struct dwarf_sections *s,
			const struct dw_unit_ctx *u, const char *comp_dir, struct line_header *h)
{
	unsigned offset_size;
	uint64_t len = dw_unit_length(c, &offset_size);
	if (!c->ok || len > c->end - c->pos)
		return false;
	h->end = c->pos + (size_t)len;
	c->end = h->end;
	h->version = (uint8_t)dw_fixed(c, 2);
	if (h->version < 2 || h->version > 5)
		return false;
	struct dw_unit_ctx lu = *u;
	lu.offset_size = (uint8_t)offset_size;
	if (h->version >= 5) {
		lu.addr_size = dw_u8(c);
		(void)dw_u8(c); /* segment selector size */
	}
	uint64_t header_length = dw_fixed(c, offset_size);
	if (!c->ok || header_length > c->end - c->pos)
		return false;
	h->program = c->pos + (size_t)header_length;
	h->min_inst_length = dw_u8(c);
	if (h->version >= 4)
		(void)dw_u8(c); /* maximum operations per instruction (VLIW only) */
	h->default_is_stmt = dw_u8(c);
	h->line_base = (int8_t)dw_u8(c);
	h->line_range = dw_u8(c);
	h->opcode_base = dw_u8(c);
	if (!c->ok || h->line_range == 0 || h->opcode_base == 0)
		return false;
	rt_memset(h->std_lengths, 0, sizeof(h->std_lengths));
	for (unsigned i = 1; i < h->opcode_base; i++)
		h->std_lengths[i] = dw_u8(c);
	if (h->version >= 5)
		return read_entries_v5(b, c, s, &lu, false) && read_entries_v5(b, c, s, &lu, true);
	return read_entries_v4(b, c, comp_dir);
}

static bool run_program(struct line_builder *b, struct dw_cursor *c, const struct line_header *h,
			uint8_t addr_size)
{
	uint64_t addr = 0;
	uint32_t file = 1, line = 1;
	uint32_t seq_first = b->t->nrows;
	/* Every iteration consumes at least one byte. */
	while (c->ok && c->pos < c->end && !b->failed) {
		uint8_t op = dw_u8(c);
		if (op >= h->opcode_base) {
			uint32_t adj = (uint32_t)(op - h->opcode_base);
			addr += (uint64_t)h->min_inst_length * (adj / h->line_range);
			line = (uint32_t)((int64_t)line + h->line_base + (int64_t)(adj % h->line_range));
			if (!add_row(b, addr, file, line))
				return false;
			continue;
		}
		switch (op) {
		case 0: {
			uint64_t len = dw_uleb(c);
			if (!c->ok || len == 0 || len > c->end - c->pos)
				return false;
			size_t next = c->pos + (size_t)len;
			uint8_t sub = dw_u8(c);
			if (sub == DW_LNE_end_sequence) {
				if (!add_row(b, addr, file, line) || !add_seq(b, seq_first, addr))
					return false;
				b->t->nrows--; /* the end row only bounds the sequence */
				if (b->t->nseqs > 0 && b->t->seqs[b->t->nseqs - 1].first == seq_first)
					b->t->seqs[b->t->nseqs - 1].count = b->t->nrows - seq_first;
				seq_first = b->t->nrows;
				addr = 0;
				file = 1;
				line = 1;
			} else if (sub == DW_LNE_set_address) {
				addr = dw_fixed(c, len - 1 <= 8 ? (unsigned)(len - 1) : addr_size);
			}
			c->pos = next;
			break;
		}
		case DW_LNS_copy:
			if (!add_row(b, addr, file, line))
				return false;
			break;
		case DW_LNS_advance_pc:
			addr += dw_uleb(c) * h->min_inst_length;
			break;
		case DW_LNS_advance_line:
			/* Modulo 2^32 (as the row's line is kept): a corrupt
			 * advance wraps the line, it does not overflow. */
			line = (uint32_t)((uint64_t)line + (uint64_t)dw_sleb(c));
			break;
		case DW_LNS_set_file:
			file = (uint32_t)dw_uleb(c);
			break;
		case DW_LNS_const_add_pc:
			addr += (uint64_t)h->min_inst_length * ((255u - h->opcode_base) / h->line_range);
			break;
		case DW_LNS_fixed_advance_pc:
			addr += dw_fixed(c, 2);
			break;
		default:
			/* Other standard opcodes: skip their operands. */
			for (unsigned i = 0; i < h->std_lengths[op]; i++)
				(void)dw_uleb(c);
			break;
		}
	}
	/* Rows after the last end_sequence belong to no sequence: dropped. */
	b->t->nrows = seq_first;
	return c->ok && !b->failed;
}

bool dw_line_decode(const struct dwarf_sections *s, const struct dw_unit_ctx *u, uint64_t offset,
		    const char *comp_dir, size_t max_bytes, struct dw_line_table *t)
{
	struct line_builder b;
	struct line_header h;
	struct dw_cursor c;
	rt_memset(t, 0, sizeof(*t));
	rt_memset(&b, 0, sizeof(b));
	b.t = t;
	b.max_bytes = max_bytes;
	if (offset >= s->line_size)
		return false;
	dw_cursor_init(&c, s->line, s->line_size, (size_t)offset);
	bool ok = read_header(&b, &c, s, u, comp_dir, &h);
	if (ok) {
		c.pos = h.program;
		ok = run_program(&b, &c, &h, u->addr_size);
	}
	rt_free(b.dirs);
	b.dirs = NULL;
	b.ndirs = 0;
	t->bytes = table_bytes(&b);
	if (!ok || b.failed) {
		bool over = t->over_budget;
		dw_line_free(t);
		t->over_budget = over;
		return false;
	}
	return true;
}

void dw_line_free(struct dw_line_table *t)
{
	rt_free(t->rows);
	rt_free(t->seqs);
	rt_free(t->files);
	rt_memset(t, 0, sizeof(*t));
}

bool dw_line_find(const struct dw_line_table *t, uint64_t addr, uint32_t *file, uint32_t *line)
{
	for (uint32_t i = 0; i < t->nseqs; i++) {
		const struct dw_line_seq *q = &t->seqs[i];
		if (addr < q->lo || addr >= q->hi || q->count == 0)
			continue;
		/* Last row whose address is <= addr. */
		uint32_t lo = rt_upper_bound(&t->rows[q->first], q->count, sizeof(t->rows[0]),
					     offsetof(struct dw_line_row, addr), addr);
		if (lo == 0)
			continue;
		const struct dw_line_row *r = &t->rows[q->first + lo - 1];
		*file = r->file;
		*line = r->line;
		return true;
	}
	return false;
}
