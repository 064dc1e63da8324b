/* rt/cursor.h: fixed-size reads, LEB128 (the DWARF 5 standard's examples,
 * 64-bit extremes, overlong and cut-off encodings) and strings. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "rt/cursor.h"

static uint64_t uleb_of(const uint8_t *p, size_t n, bool *ok)
{
	struct dw_cursor c;
	dw_cursor_init(&c, p, n, 0);
	uint64_t v = dw_uleb(&c);
	*ok = c.ok && c.pos == n;
	return v;
}

static int64_t sleb_of(const uint8_t *p, size_t n, bool *ok)
{
	struct dw_cursor c;
	dw_cursor_init(&c, p, n, 0);
	int64_t v = dw_sleb(&c);
	*ok = c.ok && c.pos == n;
	return v;
}

static void test_leb128_standard_examples(void)
{
	bool ok;
	CHECK_EQ_U64(uleb_of((const uint8_t[]){0x02}, 1, &ok), 2);
	CHECK(ok);
	CHECK_EQ_U64(uleb_of((const uint8_t[]){0x7f}, 1, &ok), 127);
	CHECK_EQ_U64(uleb_of((const uint8_t[]){0x80, 0x01}, 2, &ok), 128);
	CHECK_EQ_U64(uleb_of((const uint8_t[]){0x81, 0x01}, 2, &ok), 129);
	CHECK_EQ_U64(uleb_of((const uint8_t[]){0x82, 0x01}, 2, &ok), 130);
	CHECK_EQ_U64(uleb_of((const uint8_t[]){0xb9, 0x64}, 2, &ok), 12857);
	CHECK(ok);
	CHECK(sleb_of((const uint8_t[]){0x02}, 1, &ok) == 2);
	CHECK(sleb_of((const uint8_t[]){0x7e}, 1, &ok) == -2);
	CHECK(sleb_of((const uint8_t[]){0xff, 0x00}, 2, &ok) == 127);
	CHECK(sleb_of((const uint8_t[]){0x81, 0x7f}, 2, &ok) == -127);
	CHECK(sleb_of((const uint8_t[]){0x80, 0x01}, 2, &ok) == 128);
	CHECK(sleb_of((const uint8_t[]){0x80, 0x7f}, 2, &ok) == -128);
	CHECK(ok);
}

static void test_leb128_extremes_and_errors(void)
{
	bool ok;
	const uint8_t max[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	CHECK_EQ_U64(uleb_of(max, sizeof(max), &ok), UINT64_MAX);
	CHECK(ok);
	const uint8_t min[10] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f};
	CHECK(sleb_of(min, sizeof(min), &ok) == INT64_MIN);
	CHECK(ok);
	const uint8_t overlong[11] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
	CHECK_EQ_U64(uleb_of(overlong, sizeof(overlong), &ok), 0);
	CHECK(!ok);
	CHECK(sleb_of((const uint8_t[]){0x80, 0x80}, 2, &ok) == 0);
	CHECK(!ok);
}

static void test_fixed_and_strings(void)
{
	const uint8_t b[] = {0x34, 0x12, 'h', 'i', 0, 0xff, 0xff, 0xff, 0xff, 7};
	struct dw_cursor c;
	dw_cursor_init(&c, b, sizeof(b), 0);
	CHECK_EQ_U64(dw_fixed(&c, 2), 0x1234);
	CHECK(strcmp(dw_cstr(&c), "hi") == 0);
	unsigned offset_size = 0;
	(void)dw_unit_length(&c, &offset_size); /* 0xffffffff: 64-bit, cut off */
	CHECK(!c.ok);
	CHECK_EQ_U64(dw_u8(&c), 0); /* stays failed */
	dw_cursor_init(&c, b, sizeof(b), sizeof(b) + 1);
	CHECK(!c.ok);
}

int main(void)
{
	RUN(test_leb128_standard_examples);
	RUN(test_leb128_extremes_and_errors);
	RUN(test_fixed_and_strings);
	return CHECK_DONE();
}
