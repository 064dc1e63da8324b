/* A small printf-style formatter and a growable buffer.  The formatter is
 * signal-safe: it touches only the caller's buffer and its arguments. */
#include "rt/rt.h"

struct fmt_out {
	char *buf;
	size_t cap;
	size_t len; /* length the full output would have */
};

static void out_char(struct fmt_out *o, char c)
{
	if (o->len + 1 < o->cap)
		o->buf[o->len] = c;
	o->len++;
}

static void out_pad(struct fmt_out *o, char c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out_char(o, c);
}

static void out_str(struct fmt_out *o, const char *s, size_t n, size_t width, bool left)
{
	size_t pad = width > n ? width - n : 0;
	if (!left)
		out_pad(o, ' ', pad);
	for (size_t i = 0; i < n; i++)
		out_char(o, s[i]);
	if (left)
		out_pad(o, ' ', pad);
}

/* Digits of v in base (10 or 16) into tmp (reversed); returns count. */
static size_t to_digits(uint64_t v, unsigned base, bool upper, char tmp[24])
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	size_t n = 0;
	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v && n < 24);
	return n;
}

static void out_num(struct fmt_out *o, uint64_t v, bool neg, unsigned base, bool upper,
		    size_t width, bool left, bool zero, const char *prefix)
{
	char tmp[24];
	size_t nd = to_digits(v, base, upper, tmp);
	size_t plen = rt_strlen(prefix);
	size_t total = nd + (neg ? 1 : 0) + plen;
	size_t pad = width > total ? width - total : 0;
	if (!left && !zero)
		out_pad(o, ' ', pad);
	if (neg)
		out_char(o, '-');
	for (size_t i = 0; i < plen; i++)
		out_char(o, prefix[i]);
	if (!left && zero)
		out_pad(o, '0', pad);
	while (nd)
		out_char(o, tmp[--nd]);
	if (left)
		out_pad(o, ' ', pad);
}

size_t rt_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
	struct fmt_out o = { buf, cap, 0 };
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			out_char(&o, *p);
			continue;
		}
		p++;
		bool left = false, zero = false;
		for (; *p == '-' || *p == '0'; p++) {
			if (*p == '-')
				left = true;
			else
				zero = true;
		}
		size_t width = 0;
		for (; *p >= '0' && *p <= '9' && width < 4096; p++)
			width = width * 10 + (size_t)(*p - '0');
		int precision = -1;
		if (*p == '.' && p[1] == '*') {
			precision = va_arg(ap, int);
			p += 2;
		} else if (*p == '.') {
			precision = 0;
			for (p++; *p >= '0' && *p <= '9' && precision < 4096; p++)
				precision = precision * 10 + (*p - '0');
		}
		int lng = 0; /* 0 int, 1 long, 2 long long, 3 size_t */
		if (*p == 'l') {
			lng = 1;
			p++;
			if (*p == 'l') {
				lng = 2;
				p++;
			}
		} else if (*p == 'z') {
			lng = 3;
			p++;
		}
		switch (*p) {
		case '%':
			out_char(&o, '%');
			break;
		case 'c':
			out_char(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			size_t n = precision >= 0 ? rt_strnlen(s, (size_t)precision) : rt_strlen(s);
			out_str(&o, s, n, width, left);
			break;
		}
		case 'd':
		case 'i': {
			int64_t v = lng == 0 ? va_arg(ap, int)
				  : lng == 1 ? va_arg(ap, long)
				  : lng == 2 ? va_arg(ap, long long)
					     : (int64_t)va_arg(ap, long);
			uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
			out_num(&o, mag, v < 0, 10, false, width, left, zero, "");
			break;
		}
		case 'u':
		case 'x':
		case 'X': {
			uint64_t v = lng == 0 ? va_arg(ap, unsigned)
				   : lng == 1 ? va_arg(ap, unsigned long)
				   : lng == 2 ? va_arg(ap, unsigned long long)
					      : va_arg(ap, size_t);
			out_num(&o, v, false, *p == 'u' ? 10 : 16, *p == 'X', width, left, zero, "");
			break;
		}
		case 'p':
			out_num(&o, (uint64_t)(uintptr_t)va_arg(ap, void *), false, 16, false, width,
				left, zero, "0x");
			break;
		case 0:
			p--; /* trailing '%': stop at the terminator */
			break;
		default:
			out_char(&o, '%');
			out_char(&o, *p);
			break;
		}
	}
	if (cap)
		buf[o.len < cap ? o.len : cap - 1] = 0;
	return o.len;
}

size_t rt_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = rt_vsnprintf(buf, cap, fmt, ap);
	va_end(ap);
	return n;
}

bool rt_buf_reserve(struct rt_buf *b, size_t extra)
{
	if (b->failed)
		return false;
	if (extra <= b->cap - b->len)
		return true;
	size_t want = b->len + extra;
	if (want < b->len) {
		b->failed = true;
		return false;
	}
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want) {
		if (cap > SIZE_MAX / 2) {
			cap = want;
			break;
		}
		cap *= 2;
	}
	uint8_t *p = rt_realloc(b->data, cap);
	if (!p) {
		b->failed = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void rt_buf_append(struct rt_buf *b, const void *p, size_t n)
{
	if (n == 0 || !rt_buf_reserve(b, n))
		return;
	rt_memcpy(b->data + b->len, p, n);
	b->len += n;
}

void rt_buf_append_byte(struct rt_buf *b, uint8_t c)
{
	if (!rt_buf_reserve(b, 1))
		return;
	b->data[b->len++] = c;
}

void rt_buf_append_str(struct rt_buf *b, const char *s) { rt_buf_append(b, s, rt_strlen(s)); }

void rt_buf_appendf(struct rt_buf *b, const char *fmt, ...)
{
	va_list ap;
	char small[256];
	va_start(ap, fmt);
	size_t n = rt_vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < sizeof(small)) {
		rt_buf_append(b, small, n);
		return;
	}
	if (!rt_buf_reserve(b, n + 1))
		return;
	va_start(ap, fmt);
	(void)rt_vsnprintf((char *)b->data + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

void rt_buf_reset(struct rt_buf *b)
{
	b->len = 0;
	b->failed = false;
}

void rt_buf_free(struct rt_buf *b)
{
	rt_free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->failed = false;
}
