/* Attribute values: reading every form, and resolving strings. */
#include "dwarf/internal.h"

static bool read_value(struct dw_cursor *c, const struct dw_unit_ctx *u, uint64_t form,
		       int64_t implicit_const, struct dw_val *v)
{
	v->kind = DV_OTHER;
	v->u = 0;
	v->s = NULL;
	switch (form) {
	case DW_FORM_addr:
		v->kind = DV_ADDR;
		v->u = dw_fixed(c, u->addr_size);
		break;
	case DW_FORM_addrx:
	case DW_FORM_GNU_addr_index:
		v->kind = DV_ADDRX;
		v->u = dw_uleb(c);
		break;
	case DW_FORM_addrx1:
	case DW_FORM_addrx2:
	case DW_FORM_addrx3:
	case DW_FORM_addrx4:
		v->kind = DV_ADDRX;
		v->u = dw_fixed(c, (unsigned)(form - DW_FORM_addrx1 + 1));
		break;
	case DW_FORM_data1:
	case DW_FORM_ref1:
	case DW_FORM_flag:
	case DW_FORM_strx1:
		v->u = dw_fixed(c, 1);
		break;
	case DW_FORM_data2:
	case DW_FORM_ref2:
	case DW_FORM_strx2:
		v->u = dw_fixed(c, 2);
		break;
	case DW_FORM_strx3:
		v->u = dw_fixed(c, 3);
		break;
	case DW_FORM_data4:
	case DW_FORM_ref4:
	case DW_FORM_ref_sup4:
	case DW_FORM_strx4:
		v->u = dw_fixed(c, 4);
		break;
	case DW_FORM_data8:
	case DW_FORM_ref8:
	case DW_FORM_ref_sig8:
	case DW_FORM_ref_sup8:
		v->u = dw_fixed(c, 8);
		break;
	case DW_FORM_data16:
		(void)dw_skip(c, 16);
		break;
	case DW_FORM_sdata:
		v->u = (uint64_t)dw_sleb(c);
		break;
	case DW_FORM_udata:
	case DW_FORM_ref_udata:
	case DW_FORM_strx:
	case DW_FORM_GNU_str_index:
	case DW_FORM_loclistx:
	case DW_FORM_rnglistx:
		v->u = dw_uleb(c);
		break;
	case DW_FORM_implicit_const:
		v->u = (uint64_t)implicit_const;
		break;
	case DW_FORM_string:
		v->kind = DV_STR;
		v->s = dw_cstr(c);
		break;
	case DW_FORM_strp:
	case DW_FORM_line_strp:
	case DW_FORM_sec_offset:
	case DW_FORM_strp_sup:
	case DW_FORM_GNU_strp_alt:
	case DW_FORM_GNU_ref_alt:
		v->u = dw_fixed(c, u->offset_size);
		break;
	case DW_FORM_ref_addr:
		v->u = dw_fixed(c, u->version <= 2 ? u->addr_size : u->offset_size);
		break;
	case DW_FORM_flag_present:
		break;
	case DW_FORM_block1:
		(void)dw_skip(c, dw_fixed(c, 1));
		break;
	case DW_FORM_block2:
		(void)dw_skip(c, dw_fixed(c, 2));
		break;
	case DW_FORM_block4:
		(void)dw_skip(c, dw_fixed(c, 4));
		break;
	case DW_FORM_block:
	case DW_FORM_exprloc:
		(void)dw_skip(c, dw_uleb(c));
		break;
	default:
		c->ok = false; /* unknown form: the rest of the entry cannot be read */
		return false;
	}
	switch (form) {
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
	case DW_FORM_sdata:
	case DW_FORM_udata:
	case DW_FORM_implicit_const:
		v->kind = DV_CONST;
		break;
	case DW_FORM_ref1:
	case DW_FORM_ref2:
	case DW_FORM_ref4:
	case DW_FORM_ref8:
	case DW_FORM_ref_udata:
		v->kind = DV_REF;
		v->u += u->offset;
		break;
	case DW_FORM_ref_addr:
		v->kind = DV_REF;
		break;
	case DW_FORM_strp:
		v->kind = DV_STRP;
		break;
	case DW_FORM_line_strp:
		v->kind = DV_LINE_STRP;
		break;
	case DW_FORM_strx:
	case DW_FORM_strx1:
	case DW_FORM_strx2:
	case DW_FORM_strx3:
	case DW_FORM_strx4:
	case DW_FORM_GNU_str_index:
		v->kind = DV_STRX;
		break;
	case DW_FORM_sec_offset:
		v->kind = DV_SECOFF;
		break;
	case DW_FORM_rnglistx:
		v->kind = DV_RNGLISTX;
		break;
	default:
		break;
	}
	return c->ok;
}

bool dw_read_form(struct dw_cursor *c, const struct dw_unit_ctx *u, uint64_t form,
		  int64_t implicit_const, struct dw_val *v)
{
	if (form == DW_FORM_indirect) {
		form = dw_uleb(c);
		if (form == DW_FORM_indirect) {
			c->ok = false;
			return false;
		}
	}
	return read_value(c, u, form, implicit_const, v);
}

/* A NUL-terminated string at `off` of a section, or NULL. */
static const char *string_at(const uint8_t *data, size_t size, uint64_t off)
{
	if (data == NULL || off >= size)
		return NULL;
	for (size_t i = (size_t)off; i < size; i++) {
		if (data[i] == 0)
			return (const char *)data + off;
	}
	return NULL;
}

const char *dw_val_string(const struct dwarf_sections *s, const struct dw_unit_ctx *u,
			  const struct dw_val *v)
{
	switch (v->kind) {
	case DV_STR:
		return v->s;
	case DV_STRP:
		return string_at(s->str, s->str_size, v->u);
	case DV_LINE_STRP:
		return string_at(s->line_str, s->line_str_size, v->u);
	case DV_STRX: {
		/* Without a base (DWARF 5 producers always give one) the table's
		 * first header is assumed. */
		uint64_t base = u->has_str_offsets_base ? u->str_offsets_base : 8;
		if (v->u > (UINT64_MAX - base) / u->offset_size)
			return NULL;
		struct dw_cursor c;
		uint64_t at = base + v->u * u->offset_size;
		if (at > s->str_offsets_size)
			return NULL;
		dw_cursor_init(&c, s->str_offsets, s->str_offsets_size, (size_t)at);
		uint64_t off = dw_fixed(&c, u->offset_size);
		return c.ok ? string_at(s->str, s->str_size, off) : NULL;
	}
	default:
		return NULL;
	}
}
