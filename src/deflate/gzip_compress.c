/* gzip member (RFC 1952) around the DEFLATE compressor: 10-byte header,
 * the compressed data, CRC-32 and ISIZE trailer.  See deflate.h. */
#include "deflate/deflate_compress.h"

#include <linux/errno.h>

#include "rt/rt.h"

struct gz_state {
	struct deflate_compressor deflate;
	uint32_t crc;   /* of the input so far */
	uint32_t isize; /* input bytes so far, modulo 2^32 */
};

size_t gz_state_bytes(void) { return sizeof(struct gz_state); }

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* gz_init for an input of input_bytes in all (0: unknown). */
static int gz_init_sized(struct gz_stream *stream, int level, struct rt_buf *out, size_t input_bytes)
{
	stream->state = NULL;
	if (level < 1 || level > 9 || !out)
		return -EINVAL;
	/* A heap block: within a keep scope (rt_heap_keep_begin) the state of
	 * the previous stream comes back with its pages already in. */
	struct gz_state *s = rt_malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	stream->state = s;
	s->crc = 0;
	s->isize = 0;
	int rc = deflate_compressor_init(&s->deflate, level, out, input_bytes);
	if (rc != 0)
		return rc;
	/* Magic, CM=8 (deflate), no flags, no mtime, XFL, OS=3 (Unix). */
	uint8_t header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	header[8] = level == GZ_LEVEL_FAST ? 4 : level == GZ_LEVEL_BEST ? 2 : 0;
	return deflate_compressor_put_bytes(&s->deflate, header, sizeof(header));
}

int gz_init(struct gz_stream *stream, int level, struct rt_buf *out)
{
	return gz_init_sized(stream, level, out, 0);
}

int gz_write(struct gz_stream *stream, const void *p, size_t n)
{
	struct gz_state *s = stream->state;
	if (!s)
		return -EINVAL;
	int rc = deflate_compressor_write(&s->deflate, p, n);
	if (rc == 0) {
		s->crc = crc32_update(s->crc, p, n);
		s->isize += (uint32_t)n;
	}
	return rc;
}

int gz_finish(struct gz_stream *stream)
{
	struct gz_state *s = stream->state;
	if (!s)
		return -EINVAL;
	int rc = deflate_compressor_finish(&s->deflate);
	if (rc != 0)
		return rc;
	uint8_t trailer[8];
	put_le32(trailer, s->crc);
	put_le32(trailer + 4, s->isize);
	return deflate_compressor_put_bytes(&s->deflate, trailer, sizeof(trailer));
}

void gz_destroy(struct gz_stream *stream)
{
	rt_free(stream->state);
	stream->state = NULL;
}

int gz_compress(const void *in, size_t n, int level, struct rt_buf *out)
{
	struct gz_stream stream;
	int rc = gz_init_sized(&stream, level, out, n);
	if (rc == 0)
		rc = gz_write(&stream, in, n);
	if (rc == 0)
		rc = gz_finish(&stream);
	gz_destroy(&stream);
	return rc;
}
