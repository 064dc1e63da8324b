/* .eh_frame parser and CFA-program interpreter producing compact rows (see cfi.h).
 *
 * Layout of .eh_frame (LSB / DWARF 3 call frame information):
 *   entry := length(u32, or 0xffffffff then u64) id(u32: 0 = CIE, else the
 *            distance back to the FDE's CIE) body
 *   CIE body: version, augmentation string, code/data alignment, return
 *            address register, augmentation data ('z' length first; 'R' FDE
 *            pointer encoding, 'P' personality, 'L' LSDA encoding, 'S' signal
 *            frame), initial instructions.
 *   FDE body: pc_begin (encoded), pc_range, augmentation data, instructions.
 */
#include "unwind/cfi.h"

#include "rt/cursor.h"
#include "rt/rt.h"

/* DW_EH_PE_* pointer encodings. */
#define PE_OMIT 0xff
#define PE_FORMAT_MASK 0x0f
#define PE_APP_MASK 0x70
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_DATAREL 0x30
#define PE_INDIRECT 0x80

/* Reads a pointer in encoding `enc`; `with_app` applies pc/data relativity. */
static uint64_t rd_encoded(struct dw_cursor *r, uint8_t enc, bool with_app)
{
	uint64_t field_addr = r->addr + r->pos;
	uint64_t v;
	if (enc == PE_OMIT)
		return 0;
	switch (enc & PE_FORMAT_MASK) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		v = dw_fixed(r, 8);
		break;
	case PE_ULEB128:
		v = dw_uleb(r);
		break;
	case PE_UDATA2:
		v = dw_fixed(r, 2);
		break;
	case PE_SDATA2:
		v = (uint64_t)(int64_t)(int16_t)dw_fixed(r, 2);
		break;
	case PE_UDATA4:
		v = dw_fixed(r, 4);
		break;
	case PE_SDATA4:
		v = (uint64_t)(int64_t)(int32_t)dw_fixed(r, 4);
		break;
	case PE_SLEB128:
		v = (uint64_t)dw_sleb(r);
		break;
	default:
		r->ok = false;
		return 0;
	}
	if (!with_app)
		return v;
	switch (enc & PE_APP_MASK) {
	case 0:
		break;
	case PE_PCREL:
		v += field_addr;
		break;
	default: /* textrel, datarel, funcrel, aligned: not used for FDE pc_begin here */
		r->ok = false;
		break;
	}
	if (enc & PE_INDIRECT)
		r->ok = false; /* would need a memory read at build time */
	return v;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_z;
	bool signal;
	size_t instr_start, instr_end;
};

/* Reads the entry length at r->pos; sets *body (start of id) and *end. */
static bool entry_bounds(struct dw_cursor *r, size_t *end, bool *is64)
{
	uint64_t len = dw_fixed(r, 4);
	*is64 = false;
	if (len == 0xffffffffu) {
		len = dw_fixed(r, 8);
		*is64 = true;
	}
	if (!r->ok || len == 0 || len > r->end - r->pos)
		return false;
	*end = r->pos + (size_t)len;
	return true;
}

static bool parse_cie(const uint8_t *data, size_t size, uint64_t addr, size_t off, struct cie *c)
{
	struct dw_cursor r = {data, off, size, addr, true};
	size_t end;
	bool is64;
	char aug[8];
	size_t naug = 0;
	rt_memset(c, 0, sizeof(*c));
	c->fde_enc = PE_ABSPTR;
	if (!entry_bounds(&r, &end, &is64))
		return false;
	r.end = end;
	if (dw_fixed(&r, is64 ? 8 : 4) != 0)
		return false;
	uint8_t version = dw_u8(&r);
	if (version != 1 && version != 3 && version != 4)
		return false;
	for (;;) {
		uint8_t ch = dw_u8(&r);
		if (!r.ok)
			return false;
		if (ch == 0)
			break;
		if (naug == sizeof(aug))
			return false;
		aug[naug++] = (char)ch;
	}
	if (version == 4) { /* address_size, segment_size */
		uint8_t address_size = dw_u8(&r);
		uint8_t segment_size = dw_u8(&r);
		if (address_size != 8 || segment_size != 0)
			return false;
	}
	c->code_align = dw_uleb(&r);
	c->data_align = dw_sleb(&r);
	c->ra_reg = version == 1 ? dw_u8(&r) : dw_uleb(&r);
	size_t aug_end = r.pos;
	for (size_t i = 0; i < naug && r.ok; i++) {
		switch (aug[i]) {
		case 'z':
			if (i != 0)
				return false;
			c->has_z = true;
			aug_end = (size_t)dw_uleb(&r);
			if (aug_end > r.end - r.pos)
				return false;
			aug_end += r.pos;
			break;
		case 'R':
			c->fde_enc = dw_u8(&r);
			break;
		case 'L':
			(void)dw_u8(&r);
			break;
		case 'P': {
			uint8_t enc = dw_u8(&r);
			(void)rd_encoded(&r, (uint8_t)(enc & ~PE_INDIRECT), false);
			break;
		}
		case 'S':
			c->signal = true;
			break;
		case 'B': /* aarch64 BTI / MTE markers: no data */
		case 'G':
			break;
		default:
			/* Unknown augmentation: only skippable with 'z'. */
			if (!c->has_z)
				return false;
			i = naug;
			break;
		}
	}
	if (!r.ok || c->code_align == 0)
		return false;
	if (c->has_z) {
		if (aug_end < r.pos)
			return false;
		r.pos = aug_end;
	}
	c->instr_start = r.pos;
	c->instr_end = end;
	return true;
}

/* ---- register rules and the CFA program interpreter ---- */

enum rule_type { RULE_SAME = 0, RULE_UNDEF, RULE_OFFSET, RULE_UNSUPPORTED };
enum cfa_type { CFA_REG = 0, CFA_PLT, CFA_UNSUPPORTED };

struct rule {
	uint8_t type;
	int64_t offset;
};

struct frame_state {
	uint8_t cfa_type;
	uint8_t plt_threshold;
	uint64_t cfa_reg;
	int64_t cfa_offset;
	struct rule ra, fp;
};

#define REMEMBER_DEPTH 8

struct fde_desc {
	uint64_t pc_begin, pc_end;
	size_t off; /* of the entry */
	size_t instr_start, instr_end;
	size_t cie_off;
};

struct builder {
	struct cfi_row *rows;
	size_t nrows, cap;
	uint64_t base;
	bool failed;
	/* Lookup mode: no rows are stored, only the one covering `target`, and
	 * where it starts (row_lo) and the next row does (row_hi; 0 until one
	 * was made, which is above target; rows come in address order). */
	bool lookup, found;
	uint64_t target;
	struct cfi_row row;
	uint64_t row_lo, row_hi;
};

static struct rule *rule_for(struct frame_state *s, uint64_t reg)
{
	if (reg == CFI_REG_RA)
		return &s->ra;
	if (reg == CFI_REG_FP)
		return &s->fp;
	return NULL;
}

static struct rule initial_rule(const struct frame_state *initial, uint64_t reg)
{
	struct rule none = {RULE_SAME, 0};
	if (reg == CFI_REG_RA)
		return initial->ra;
	if (reg == CFI_REG_FP)
		return initial->fp;
	return none;
}

static void set_rule(struct frame_state *s, uint64_t reg, uint8_t type, int64_t offset)
{
	struct rule *rl = rule_for(s, reg);
	if (rl != NULL) {
		rl->type = type;
		rl->offset = offset;
	}
}

static void make_row(const struct frame_state *s, bool signal, struct cfi_row *row)
{
	rt_memset(row, 0, sizeof(*row));
	row->kind = CFI_UNSUPPORTED;
	row->fp_offset = CFI_FP_UNKNOWN;
	if (signal) {
		row->kind = CFI_SIGNAL;
		return;
	}
	if (s->ra.type == RULE_UNDEF) {
		row->kind = CFI_OUTERMOST;
		return;
	}
	/* The return address still in the link register (same value) is
	 * modelled where the architecture has one; elsewhere it must be saved. */
	const bool ra_in_register = ARCH_CFI_LINK_REGISTER && s->ra.type == RULE_SAME;
	if (s->cfa_type == CFA_UNSUPPORTED || (s->ra.type != RULE_OFFSET && !ra_in_register) ||
	    (s->cfa_reg != CFI_REG_SP && s->cfa_reg != CFI_REG_FP) || s->cfa_offset < 0 ||
	    s->cfa_offset > INT32_MAX ||
	    (!ra_in_register && (s->ra.offset < INT8_MIN || s->ra.offset > -8)))
		return;
	if (s->cfa_type == CFA_PLT && s->cfa_reg != CFI_REG_SP)
		return;
	row->kind = s->cfa_type == CFA_PLT ? CFI_PLT : CFI_NORMAL;
	row->cfa_reg = (uint8_t)s->cfa_reg;
	row->cfa_offset = (int32_t)s->cfa_offset;
	row->ra_offset = ra_in_register ? CFI_RA_IN_LINK_REGISTER : (int8_t)s->ra.offset;
	row->plt_threshold = s->plt_threshold;
	if (s->fp.type == RULE_SAME)
		row->fp_offset = CFI_FP_SAME;
	else if (s->fp.type == RULE_OFFSET && s->fp.offset < 0 && s->fp.offset > INT16_MIN)
		row->fp_offset = (int16_t)s->fp.offset;
}

static bool rows_equal_but_pc(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->cfa_offset == b->cfa_offset && a->kind == b->kind && a->cfa_reg == b->cfa_reg &&
	       a->ra_offset == b->ra_offset && a->plt_threshold == b->plt_threshold &&
	       a->fp_offset == b->fp_offset;
}

static void builder_push(struct builder *b, uint64_t pc, const struct cfi_row *row)
{
	if (b->lookup) {
		/* Rows come in address order; a later one at the same pc replaces. */
		if (pc <= b->target) {
			b->row = *row;
			b->found = true;
			b->row_lo = pc;
		} else if (b->row_hi == 0 || pc < b->row_hi) {
			b->row_hi = pc;
		}
		return;
	}
	if (b->failed)
		return;
	uint32_t rel = (uint32_t)(pc - b->base);
	/* Rows of overlapping FDEs: the later FDE wins from its start on. */
	while (b->nrows > 0 && b->rows[b->nrows - 1].pc > rel)
		b->nrows--;
	if (b->nrows > 0 && b->rows[b->nrows - 1].pc == rel) {
		b->nrows--;
		if (b->nrows > 0 && rows_equal_but_pc(&b->rows[b->nrows - 1], row))
			return;
	} else if (b->nrows > 0 && rows_equal_but_pc(&b->rows[b->nrows - 1], row)) {
		return;
	}
	if (b->nrows == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 1024;
		struct cfi_row *n = rt_realloc(b->rows, ncap * sizeof(*n));
		if (n == NULL) {
			b->failed = true;
			return;
		}
		b->rows = n;
		b->cap = ncap;
	}
	b->rows[b->nrows] = *row;
	b->rows[b->nrows].pc = rel;
	b->nrows++;
}

/* Recognizes the x86_64 PLT CFA expression (ARCH_CFI_PLT_EXPRESSION):
 *   breg7(rsp) N; breg16(rip) 0; lit15; and; litK; ge; lit3; shl; plus
 * meaning CFA = rsp + N + ((rip & 15) >= K ? 8 : 0). */
static bool parse_plt_expression(struct dw_cursor *r, size_t len, struct frame_state *s)
{
	size_t end = r->pos + len;
	struct dw_cursor e = *r;
	e.end = end;
	bool ok = ARCH_CFI_PLT_EXPRESSION && dw_u8(&e) == 0x77;
	int64_t n = dw_sleb(&e);
	ok = ok && dw_u8(&e) == 0x80 && dw_sleb(&e) == 0 && dw_u8(&e) == 0x3f && dw_u8(&e) == 0x1a;
	uint8_t lit = dw_u8(&e);
	ok = ok && lit >= 0x30 && lit <= 0x3f && dw_u8(&e) == 0x2a && dw_u8(&e) == 0x33 &&
	     dw_u8(&e) == 0x24 && dw_u8(&e) == 0x22 && e.ok && e.pos == end && n >= 0 && n < 4096;
	if (!ok)
		return false;
	s->cfa_type = CFA_PLT;
	s->cfa_reg = CFI_REG_SP;
	s->cfa_offset = n;
	s->plt_threshold = (uint8_t)(lit - 0x30);
	return true;
}

struct program_ctx {
	const struct cie *cie;
	const struct frame_state *initial; /* state after the CIE program, for DW_CFA_restore */
	struct frame_state remembered[REMEMBER_DEPTH];
	unsigned nremembered;
	uint64_t loc, end;
	struct builder *out; /* NULL while running the CIE's initial instructions */
};

static void emit(struct program_ctx *p, const struct frame_state *s)
{
	struct cfi_row row;
	if (p->out == NULL)
		return;
	make_row(s, p->cie->signal, &row);
	builder_push(p->out, p->loc, &row);
}

/* Moves the location forward; false (program ends) if it leaves the FDE. */
static bool advance(struct program_ctx *p, const struct frame_state *s, uint64_t delta_units)
{
	if (delta_units > (p->end - p->loc) / p->cie->code_align)
		return false;
	uint64_t next = p->loc + delta_units * p->cie->code_align;
	/* A lookup keeps the last row at or below its address: a row that one
	 * at `next` (at the latest, run_fde's last) replaces is not made. */
	if (p->out != NULL && p->out->lookup && next <= p->out->target) {
		p->loc = next;
		return true;
	}
	emit(p, s);
	p->loc = next;
	/* A lookup needs nothing past its address. */
	return p->out == NULL || !p->out->lookup || p->loc <= p->out->target;
}

/* off * data_align for a rule or CFA offset; a product that does not fit
 * (only corrupt CFI gets there) stops the reader instead of overflowing. */
static int64_t scaled(struct dw_cursor *r, int64_t off, int64_t data_align)
{
	int64_t v;
	if (__builtin_mul_overflow(off, data_align, &v)) {
		r->ok = false;
		return 0;
	}
	return v;
}

/* Runs instructions in [r->pos, r->end).  Unknown opcodes end the program
 * with the CFA marked unsupported from that location on. */
static void run_program(struct program_ctx *p, struct dw_cursor *r, struct frame_state *s)
{
	const int64_t da = p->cie->data_align;
	while (r->ok && r->pos < r->end) {
		uint8_t op = dw_u8(r);
		uint8_t low = op & 0x3f;
		uint64_t reg, off;
		switch (op & 0xc0) {
		case 0x40: /* DW_CFA_advance_loc */
			if (!advance(p, s, low))
				return;
			continue;
		case 0x80: /* DW_CFA_offset */
			off = dw_uleb(r);
			set_rule(s, low, RULE_OFFSET, scaled(r, (int64_t)off, da));
			continue;
		case 0xc0: { /* DW_CFA_restore */
			struct rule *rl = rule_for(s, low);
			if (rl != NULL)
				*rl = initial_rule(p->initial, low);
			continue;
		}
		default:
			break;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: { /* set_loc */
			uint64_t loc = rd_encoded(r, p->cie->fde_enc, true);
			if (!r->ok || loc < p->loc || loc > p->end)
				return;
			emit(p, s);
			p->loc = loc;
			break;
		}
		case 0x02: /* advance_loc1 */
			if (!advance(p, s, dw_fixed(r, 1)))
				return;
			break;
		case 0x03: /* advance_loc2 */
			if (!advance(p, s, dw_fixed(r, 2)))
				return;
			break;
		case 0x04: /* advance_loc4 */
			if (!advance(p, s, dw_fixed(r, 4)))
				return;
			break;
		case 0x05: /* offset_extended */
			reg = dw_uleb(r);
			off = dw_uleb(r);
			set_rule(s, reg, RULE_OFFSET, scaled(r, (int64_t)off, da));
			break;
		case 0x06: { /* restore_extended */
			reg = dw_uleb(r);
			struct rule *rl = rule_for(s, reg);
			if (rl != NULL)
				*rl = initial_rule(p->initial, reg);
			break;
		}
		case 0x07: /* undefined */
			set_rule(s, dw_uleb(r), RULE_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			set_rule(s, dw_uleb(r), RULE_SAME, 0);
			break;
		case 0x09: /* register */
			reg = dw_uleb(r);
			off = dw_uleb(r);
			set_rule(s, reg, off == reg ? RULE_SAME : RULE_UNSUPPORTED, 0);
			break;
		case 0x0a: /* remember_state */
			if (p->nremembered == REMEMBER_DEPTH) {
				s->cfa_type = CFA_UNSUPPORTED;
				emit(p, s);
				return;
			}
			p->remembered[p->nremembered++] = *s;
			break;
		case 0x0b: /* restore_state */
			if (p->nremembered == 0) {
				s->cfa_type = CFA_UNSUPPORTED;
				emit(p, s);
				return;
			}
			*s = p->remembered[--p->nremembered];
			break;
		case 0x0c: /* def_cfa */
			s->cfa_reg = dw_uleb(r);
			s->cfa_offset = (int64_t)dw_uleb(r);
			s->cfa_type = CFA_REG;
			break;
		case 0x0d: /* def_cfa_register */
			s->cfa_reg = dw_uleb(r);
			if (s->cfa_type == CFA_PLT)
				s->cfa_type = CFA_UNSUPPORTED;
			break;
		case 0x0e: /* def_cfa_offset */
			s->cfa_offset = (int64_t)dw_uleb(r);
			break;
		case 0x0f: { /* def_cfa_expression */
			uint64_t len = dw_uleb(r);
			if (!r->ok || len > r->end - r->pos)
				return;
			if (!parse_plt_expression(r, (size_t)len, s))
				s->cfa_type = CFA_UNSUPPORTED;
			r->pos += (size_t)len;
			break;
		}
		case 0x10:   /* expression */
		case 0x16: { /* val_expression */
			reg = dw_uleb(r);
			uint64_t len = dw_uleb(r);
			if (!r->ok || len > r->end - r->pos)
				return;
			r->pos += (size_t)len;
			set_rule(s, reg, RULE_UNSUPPORTED, 0);
			break;
		}
		case 0x11: /* offset_extended_sf */
			reg = dw_uleb(r);
			set_rule(s, reg, RULE_OFFSET, scaled(r, dw_sleb(r), da));
			break;
		case 0x12: /* def_cfa_sf */
			s->cfa_reg = dw_uleb(r);
			s->cfa_offset = scaled(r, dw_sleb(r), da);
			s->cfa_type = CFA_REG;
			break;
		case 0x13: /* def_cfa_offset_sf */
			s->cfa_offset = scaled(r, dw_sleb(r), da);
			break;
		case 0x14: /* val_offset */
			reg = dw_uleb(r);
			(void)dw_uleb(r);
			set_rule(s, reg, RULE_UNSUPPORTED, 0);
			break;
		case 0x15: /* val_offset_sf */
			reg = dw_uleb(r);
			(void)dw_sleb(r);
			set_rule(s, reg, RULE_UNSUPPORTED, 0);
			break;
		case 0x2e: /* GNU_args_size */
			(void)dw_uleb(r);
			break;
		case 0x2d: /* AARCH64_negate_ra_state (elsewhere: unknown) */
			if (!ARCH_CFI_NEGATE_RA_STATE) {
				s->cfa_type = CFA_UNSUPPORTED;
				emit(p, s);
				return;
			}
			/* The signed return address is stripped when read. */
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = dw_uleb(r);
			off = dw_uleb(r);
			{
				int64_t v = scaled(r, (int64_t)off, da);
				if (v == INT64_MIN) /* its negation does not fit */
					r->ok = false;
				set_rule(s, reg, RULE_OFFSET, r->ok ? -v : 0);
			}
			break;
		default:
			s->cfa_type = CFA_UNSUPPORTED;
			emit(p, s);
			return;
		}
	}
}

/* Runs one FDE (CIE initial instructions, then its own) into the builder. */
static void run_fde(const uint8_t *data, uint64_t addr, const struct fde_desc *f,
		    const struct cie *c, struct builder *b)
{
	struct cie cie = *c;
	struct frame_state state, initial;
	struct cfi_row none;
	/* A return address kept in another register is not modelled: no rows,
	 * so the unwinder falls back to frame pointers there. */
	if (cie.ra_reg != CFI_REG_RA)
		return;
	rt_memset(&state, 0, sizeof(state));
	state.cfa_type = CFA_UNSUPPORTED;
	/* Where the return address arrives in a link register, it stays there
	 * until the program says otherwise. */
	state.ra.type = ARCH_CFI_LINK_REGISTER ? RULE_SAME : RULE_UNSUPPORTED;
	struct program_ctx p;
	rt_memset(&p, 0, sizeof(p));
	p.cie = &cie;
	p.initial = &initial;
	p.loc = f->pc_begin;
	p.end = f->pc_end;
	initial = state;
	struct dw_cursor r = {data, cie.instr_start, cie.instr_end, addr, true};
	run_program(&p, &r, &state);
	initial = state;
	p.loc = f->pc_begin;
	p.nremembered = 0;
	p.out = b;
	struct dw_cursor fr = {data, f->instr_start, f->instr_end, addr, true};
	run_program(&p, &fr, &state);
	emit(&p, &state);
	rt_memset(&none, 0, sizeof(none));
	none.kind = CFI_NONE;
	none.fp_offset = CFI_FP_UNKNOWN;
	builder_push(b, f->pc_end, &none);
}

static bool fde_before(const void *a, const void *b)
{
	return ((const struct fde_desc *)a)->pc_begin < ((const struct fde_desc *)b)->pc_begin;
}

/* Reads the entry at `off` as an FDE (its CIE parsed into *cie).  *next is
 * the offset of the following entry, or 0 at a terminator or a corrupt
 * length (nothing further can be read).  False for a CIE or a malformed
 * FDE. */
static bool parse_fde(const uint8_t *data, size_t size, uint64_t addr, size_t off,
		      struct fde_desc *f, struct cie *cie, size_t *next)
{
	struct dw_cursor r = {data, off, size, addr, true};
	size_t end;
	bool is64;
	*next = 0;
	if (off >= size || !entry_bounds(&r, &end, &is64))
		return false;
	*next = end;
	r.end = end;
	size_t id_pos = r.pos;
	uint64_t id = dw_fixed(&r, is64 ? 8 : 4);
	if (!r.ok || id == 0 || id > id_pos)
		return false;
	f->off = off;
	f->cie_off = id_pos - (size_t)id;
	if (!parse_cie(data, size, addr, f->cie_off, cie))
		return false;
	f->pc_begin = rd_encoded(&r, cie->fde_enc, true);
	uint64_t range = rd_encoded(&r, (uint8_t)(cie->fde_enc & PE_FORMAT_MASK), false);
	if (cie->has_z) {
		uint64_t alen = dw_uleb(&r);
		if (!r.ok || alen > r.end - r.pos)
			return false;
		r.pos += (size_t)alen;
	}
	if (!r.ok || range == 0 || range > UINT64_MAX - f->pc_begin)
		return false;
	f->pc_end = f->pc_begin + range;
	f->instr_start = r.pos;
	f->instr_end = end;
	return true;
}

/* Collects FDE descriptors of every entry whose range lies in [base, base+limit). */
static struct fde_desc *collect_fdes(const uint8_t *data, size_t size, uint64_t addr,
				     uint64_t base, uint64_t limit, size_t *count)
{
	struct fde_desc *fdes = NULL;
	size_t n = 0, cap = 0;
	size_t pos = 0;
	*count = 0;
	/* Every entry consumes at least 8 bytes, which bounds the loop. */
	while (size - pos >= 8) {
		struct cie cie;
		struct fde_desc f;
		size_t next;
		bool ok = parse_fde(data, size, addr, pos, &f, &cie, &next);
		if (next == 0)
			break; /* zero terminator or corrupt length */
		pos = next;
		if (!ok || f.pc_begin < base || f.pc_begin - base >= limit ||
		    f.pc_end - f.pc_begin > limit - (f.pc_begin - base))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct fde_desc *nf = rt_realloc(fdes, ncap * sizeof(*nf));
			if (nf == NULL) {
				rt_free(fdes);
				return NULL;
			}
			fdes = nf;
			cap = ncap;
		}
		fdes[n++] = f;
	}
	*count = n;
	return fdes;
}

struct cfi_table *cfi_table_build(const uint8_t *data, size_t size, uint64_t eh_addr,
				  uint64_t base, uint64_t limit)
{
	size_t nfdes;
	if (data == NULL || limit == 0 || limit > UINT32_MAX || base > UINT64_MAX - limit)
		return NULL;
	struct fde_desc *fdes = collect_fdes(data, size, eh_addr, base, limit, &nfdes);
	if (fdes == NULL)
		return NULL;
	rt_sort(fdes, nfdes, sizeof(fdes[0]), fde_before);
	struct builder b;
	rt_memset(&b, 0, sizeof(b));
	b.base = base;
	for (size_t i = 0; i < nfdes; i++) {
		struct cie cie;
		if (parse_cie(data, size, eh_addr, fdes[i].cie_off, &cie))
			run_fde(data, eh_addr, &fdes[i], &cie, &b);
	}
	rt_free(fdes);
	struct cfi_table *t = NULL;
	uint64_t npages = ((limit - 1) >> CFI_PAGE_SHIFT) + 1;
	if (!b.failed && b.nrows > 0 && b.nrows <= UINT32_MAX) {
		size_t rows_bytes = b.nrows * sizeof(struct cfi_row);
		t = rt_malloc(sizeof(*t) + rows_bytes + (npages + 1) * sizeof(uint32_t));
		if (t != NULL) {
			uint32_t *page_first = (uint32_t *)(void *)((uint8_t *)t->rows + rows_bytes);
			t->base = base;
			t->limit = limit;
			t->nrows = (uint32_t)b.nrows;
			t->npages = (uint32_t)npages;
			rt_memcpy(t->rows, b.rows, rows_bytes);
			uint32_t r = 0;
			for (uint64_t p = 0; p <= npages; p++) {
				while (r < t->nrows && (t->rows[r].pc >> CFI_PAGE_SHIFT) < p)
					r++;
				page_first[p] = r;
			}
			t->page_first = page_first;
		}
	}
	rt_free(b.rows);
	return t;
}

void cfi_table_free(struct cfi_table *t) { rt_free(t); }

const struct cfi_row *cfi_table_lookup(const struct cfi_table *t, uint64_t pc)
{
	if (t == NULL || pc < t->base || pc - t->base >= t->limit || t->nrows == 0)
		return NULL;
	uint32_t rel = (uint32_t)(pc - t->base);
	uint32_t page = rel >> CFI_PAGE_SHIFT;
	if (page >= t->npages)
		return NULL;
	/* The answer is the last row with pc <= rel: among the rows of this page,
	 * or the last row before it. */
	uint32_t lo = t->page_first[page], hi = t->page_first[page + 1];
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (t->rows[mid].pc <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct cfi_row *row = &t->rows[lo - 1];
	return row->kind == CFI_NONE ? NULL : row;
}

/* ---- rules looked up in place ---- */

/* DW_EH_PE_datarel | DW_EH_PE_sdata4: the only search-table encoding linkers write. */
#define HDR_TABLE_ENC 0x3b

/* Windows of at least 64 KiB, aligned as the kernel aligns the pages it
 * maps around a fault, enough of them to span [lo, hi). */
static void read_windows_init(struct cfi_index *ix, uint64_t lo, uint64_t hi)
{
	ix->read_base = lo & ~(uint64_t)0xffff;
	ix->read_shift = 16;
	while (ix->read_shift < 63 && ((hi - ix->read_base) >> ix->read_shift) >= CFI_READ_WORDS * 64u)
		ix->read_shift++;
	for (uint32_t i = 0; i < CFI_READ_WORDS; i++)
		atomic_store_explicit(&ix->read_windows[i], 0, memory_order_relaxed);
}

/* Notes that a lookup read the byte at p (nothing for bytes outside the
 * windows: a table on the heap).  [signal-safe] */
static inline void mark_read(struct cfi_index *ix, const uint8_t *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	if (a < ix->read_base)
		return;
	uint64_t w = (a - ix->read_base) >> ix->read_shift;
	if (w >= CFI_READ_WORDS * 64u)
		return;
	_Atomic uint64_t *word = &ix->read_windows[w / 64u];
	uint64_t bit = 1ull << (w % 64u);
	if (!(atomic_load_explicit(word, memory_order_relaxed) & bit))
		(void)atomic_fetch_or_explicit(word, bit, memory_order_relaxed);
}

bool cfi_index_from_hdr(struct cfi_index *ix, const uint8_t *hdr, size_t hdr_size,
			uint64_t hdr_addr, const uint8_t *eh_frame, uint64_t eh_frame_size,
			uint64_t eh_frame_addr)
{
	rt_memset(ix, 0, sizeof(*ix));
	struct dw_cursor r = {hdr, 0, hdr_size, hdr_addr, true};
	uint8_t version = dw_u8(&r);
	uint8_t ptr_enc = dw_u8(&r);
	uint8_t count_enc = dw_u8(&r);
	uint8_t table_enc = dw_u8(&r);
	if (!r.ok || version != 1 || ptr_enc == PE_OMIT || count_enc == PE_OMIT ||
	    table_enc != HDR_TABLE_ENC)
		return false;
	uint64_t ptr = rd_encoded(&r, ptr_enc, true);
	uint64_t count = rd_encoded(&r, count_enc, true);
	if (!r.ok || ptr != eh_frame_addr || count == 0 || count > UINT32_MAX ||
	    count > (r.end - r.pos) / 8 || eh_frame == NULL || eh_frame_size == 0)
		return false;
	ix->eh_frame = eh_frame;
	ix->eh_frame_size = eh_frame_size;
	ix->eh_frame_addr = eh_frame_addr;
	ix->table = hdr + r.pos;
	ix->count = (uint32_t)count;
	ix->pc_base = hdr_addr;
	ix->fde_base = hdr_addr;
	const uint8_t *table_end = ix->table + (size_t)ix->count * 8;
	read_windows_init(ix, (uint64_t)(uintptr_t)RT_MIN(ix->table, eh_frame),
			  (uint64_t)(uintptr_t)RT_MAX(table_end, eh_frame + eh_frame_size));
	return true;
}

static bool fde_at_before(const void *a, const void *b)
{
	int32_t x, y;
	rt_memcpy(&x, a, sizeof(x));
	rt_memcpy(&y, b, sizeof(y));
	return x < y;
}

bool cfi_index_build(struct cfi_index *ix, const uint8_t *eh_frame, uint64_t eh_frame_size,
		     uint64_t eh_frame_addr, uint64_t base, uint64_t limit)
{
	size_t n;
	rt_memset(ix, 0, sizeof(*ix));
	/* Both halves of an entry are int32 offsets from base and eh_frame_addr. */
	if (eh_frame == NULL || eh_frame_size == 0 || eh_frame_size > INT32_MAX || limit == 0 ||
	    limit > INT32_MAX || base > UINT64_MAX - limit)
		return false;
	struct fde_desc *fdes = collect_fdes(eh_frame, (size_t)eh_frame_size, eh_frame_addr, base,
					     limit, &n);
	if (fdes == NULL || n == 0 || n > UINT32_MAX) {
		rt_free(fdes);
		return false;
	}
	int32_t *table = rt_malloc(n * 2 * sizeof(int32_t));
	if (table == NULL) {
		rt_free(fdes);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		table[2 * i] = (int32_t)(fdes[i].pc_begin - base);
		table[2 * i + 1] = (int32_t)fdes[i].off;
	}
	rt_free(fdes);
	rt_sort(table, n, 2 * sizeof(int32_t), fde_at_before);
	ix->eh_frame = eh_frame;
	ix->eh_frame_size = eh_frame_size;
	ix->eh_frame_addr = eh_frame_addr;
	ix->table = (const uint8_t *)table;
	ix->count = (uint32_t)n;
	ix->pc_base = base;
	ix->fde_base = eh_frame_addr;
	ix->owned_bytes = n * 2 * sizeof(int32_t);
	/* The table is ours, on the heap: only .eh_frame is file pages. */
	read_windows_init(ix, (uint64_t)(uintptr_t)eh_frame, (uint64_t)(uintptr_t)(eh_frame + eh_frame_size));
	return true;
}

void cfi_index_free(struct cfi_index *ix)
{
	if (ix->owned_bytes > 0)
		rt_free((void *)(uintptr_t)ix->table);
	rt_memset(ix, 0, sizeof(*ix));
}

static int32_t table_field(const struct cfi_index *ix, uint32_t entry, uint32_t half)
{
	int32_t v;
	__builtin_memcpy(&v, ix->table + (size_t)entry * 8 + half * 4, sizeof(v));
	return v;
}

uint64_t cfi_index_read_bytes(const struct cfi_index *ix)
{
	uint64_t windows = 0;
	for (uint32_t i = 0; i < CFI_READ_WORDS; i++) {
		uint64_t v = atomic_load_explicit(&ix->read_windows[i], memory_order_relaxed);
		for (; v != 0; v &= v - 1)
			windows++;
	}
	return windows << ix->read_shift;
}

void cfi_index_forget_reads(struct cfi_index *ix)
{
	for (uint32_t i = 0; i < CFI_READ_WORDS; i++)
		atomic_store_explicit(&ix->read_windows[i], 0, memory_order_relaxed);
}

/* The FDE covering link-time address pc and its CIE, found through the
 * search table (the bytes read noted for the page budget). */
static bool index_fde(struct cfi_index *ix, uint64_t pc, struct fde_desc *f, struct cie *cie)
{
	if (ix == NULL || ix->count == 0)
		return false;
	/* The last entry starting at or below pc. */
	uint32_t lo = 0, hi = ix->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		mark_read(ix, ix->table + (size_t)mid * 8);
		if (ix->pc_base + (uint64_t)(int64_t)table_field(ix, mid, 0) <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	uint64_t fde_addr = ix->fde_base + (uint64_t)(int64_t)table_field(ix, lo - 1, 1);
	if (fde_addr < ix->eh_frame_addr || fde_addr - ix->eh_frame_addr >= ix->eh_frame_size)
		return false;
	size_t next;
	mark_read(ix, ix->eh_frame + (fde_addr - ix->eh_frame_addr));
	bool parsed = parse_fde(ix->eh_frame, (size_t)ix->eh_frame_size, ix->eh_frame_addr,
				(size_t)(fde_addr - ix->eh_frame_addr), f, cie, &next);
	if (parsed) {
		mark_read(ix, ix->eh_frame + next - 1);
		mark_read(ix, ix->eh_frame + f->cie_off);
		mark_read(ix, ix->eh_frame + cie->instr_end - 1);
	}
	return parsed && pc >= f->pc_begin && pc < f->pc_end;
}

bool cfi_index_function_start(struct cfi_index *ix, uint64_t pc, uint64_t *start)
{
	struct fde_desc f;
	struct cie cie;
	if (!index_fde(ix, pc, &f, &cie))
		return false;
	*start = f.pc_begin;
	return true;
}

bool cfi_index_lookup_span(struct cfi_index *ix, uint64_t pc, struct cfi_row *out, uint64_t *lo,
			   uint64_t *hi)
{
	struct fde_desc f;
	struct cie cie;
	*lo = pc;
	*hi = pc + 1;
	if (!index_fde(ix, pc, &f, &cie))
		return false;
	struct builder b;
	rt_memset(&b, 0, sizeof(b));
	b.lookup = true;
	b.target = pc;
	run_fde(ix->eh_frame, ix->eh_frame_addr, &f, &cie, &b);
	if (!b.found)
		return false;
	/* run_fde always ends with a row at the FDE's end, past pc. */
	if (b.row_lo <= pc && pc < b.row_hi) {
		*lo = b.row_lo;
		*hi = b.row_hi;
	}
	if (b.row.kind == CFI_NONE)
		return false;
	*out = b.row;
	out->pc = 0;
	return true;
}

bool cfi_index_lookup(struct cfi_index *ix, uint64_t pc, struct cfi_row *out)
{
	uint64_t lo, hi;
	return cfi_index_lookup_span(ix, pc, out, &lo, &hi);
}
