/* A bounds-checked little-endian cursor over bytes in DWARF's encodings
 * (fixed-size, LEB128, initial length): the one reader of both .eh_frame
 * (unwind/cfi.c) and the DWARF debug sections (dwarf/).  Any read past the
 * end clears `ok` and yields 0, so callers check `ok` once after a group of
 * reads instead of after each one.  Pure and async-signal-safe. */
#ifndef STOWAWAY_RT_CURSOR_H
#define STOWAWAY_RT_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dw_cursor {
	const uint8_t *data;
	size_t pos, end;
	uint64_t addr; /* address of data[0], for pc-relative pointers; else 0 */
	bool ok;
};

static inline void dw_cursor_init(struct dw_cursor *c, const uint8_t *data, size_t size, size_t pos)
{
	c->data = data;
	c->end = size;
	c->pos = pos;
	c->addr = 0;
	c->ok = data != NULL && pos <= size;
}

static inline bool dw_skip(struct dw_cursor *c, uint64_t n)
{
	if (!c->ok || c->end - c->pos < n) {
		c->ok = false;
		return false;
	}
	c->pos += (size_t)n;
	return true;
}

static inline uint64_t dw_fixed(struct dw_cursor *c, unsigned n)
{
	uint64_t v = 0;
	if (n > 8 || !c->ok || c->end - c->pos < n) {
		c->ok = false;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)c->data[c->pos + i] << (8 * i);
	c->pos += n;
	return v;
}

static inline uint8_t dw_u8(struct dw_cursor *c) { return (uint8_t)dw_fixed(c, 1); }

/* A LEB128 number's low 64 bits; *bits is how many bits it was written
 * with and *sign its top bit (for sign extension).  An encoding longer than
 * ten bytes or cut off clears `ok` and yields 0. */
static inline uint64_t dw_leb(struct dw_cursor *c, unsigned *bits, bool *sign)
{
	uint64_t v = 0;
	*bits = 0;
	*sign = false;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t b = dw_u8(c);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*bits = shift + 7;
			*sign = (b & 0x40) != 0;
			return v;
		}
	}
	c->ok = false;
	return 0;
}

static inline uint64_t dw_uleb(struct dw_cursor *c)
{
	unsigned bits;
	bool sign;
	return dw_leb(c, &bits, &sign);
}

static inline int64_t dw_sleb(struct dw_cursor *c)
{
	unsigned bits;
	bool sign;
	uint64_t v = dw_leb(c, &bits, &sign);
	if (sign && bits < 64)
		v |= ~(uint64_t)0 << bits;
	return (int64_t)v;
}

/* A NUL-terminated string at the cursor (terminated inside the section). */
static inline const char *dw_cstr(struct dw_cursor *c)
{
	if (!c->ok)
		return NULL;
	for (size_t i = c->pos; i < c->end; i++) {
		if (c->data[i] == 0) {
			const char *s = (const char *)c->data + c->pos;
			c->pos = i + 1;
			return s;
		}
	}
	c->ok = false;
	return NULL;
}

/* Initial length of a unit: sets *offset_size to 4 or 8; the unit's length. */
static inline uint64_t dw_unit_length(struct dw_cursor *c, unsigned *offset_size)
{
	uint64_t len = dw_fixed(c, 4);
	*offset_size = 4;
	if (len == 0xffffffffu) {
		len = dw_fixed(c, 8);
		*offset_size = 8;
	} else if (len >= 0xfffffff0u) {
		c->ok = false;
	}
	return len;
}

#endif
