/* Helpers shared by the CLI modules: errors, allocation, buffers, files. */
#include "cli/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char cli_err[CLI_ERR_SIZE];

void cli_set_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* clang-tidy 14 reports this va_list as uninitialized only when it
	 * checks several files in one run (each file alone is clean). */
	vsnprintf(cli_err, sizeof(cli_err), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
}

void cli_out_of_memory(void)
{
	fputs("stowaway: out of memory\n", stderr);
	exit(1);
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		cli_out_of_memory();
	return p;
}

void *xcalloc(size_t count, size_t size)
{
	void *p = calloc(count ? count : 1, size ? size : 1);
	if (!p)
		cli_out_of_memory();
	return p;
}

void *xgrow(void *ptr, size_t *cap, size_t need, size_t elem_size)
{
	if (need <= *cap)
		return ptr;
	size_t new_cap = *cap ? *cap : 8;
	while (new_cap < need) {
		if (new_cap > SIZE_MAX / 2)
			cli_out_of_memory();
		new_cap *= 2;
	}
	if (new_cap > SIZE_MAX / elem_size)
		cli_out_of_memory();
	void *p = realloc(ptr, new_cap * elem_size);
	if (!p)
		cli_out_of_memory();
	*cap = new_cap;
	return p;
}

char *xstrndup(const char *s, size_t len)
{
	char *p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

void buf_append(struct cli_buf *b, const void *data, size_t len)
{
	if (len > SIZE_MAX - b->len)
		cli_out_of_memory();
	b->data = xgrow(b->data, &b->cap, b->len + len, 1);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
}

void buf_printf(struct cli_buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized): see cli_set_error
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		buf_append(b, small, (size_t)n);
		return;
	}
	b->data = xgrow(b->data, &b->cap, b->len + (size_t)n + 1, 1);
	va_start(ap, fmt);
	vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void buf_free(struct cli_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

int read_file(const char *path, size_t max_size, struct cli_buf *out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return cli_fail("%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cli_fail("%s: not a regular file", path);
	}
	out->len = 0;
	for (;;) {
		if (out->len > max_size) {
			close(fd);
			return cli_fail("%s: larger than %zu bytes", path, max_size);
		}
		out->data = xgrow(out->data, &out->cap, out->len + 65536, 1);
		ssize_t n = read(fd, out->data + out->len, out->cap - out->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return cli_fail("%s: %s", path, strerror(e));
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
	}
	close(fd);
	return 0;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Makes a rename durable; failure only weakens durability, so it is not
 * reported (some file systems refuse fsync on directories). */
static void fsync_parent_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrndup(".", 1);
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

int write_file_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	size_t plen = strlen(path);
	char *tmp = xmalloc(plen + 32);
	snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		cli_set_error("%s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	int rc = write_all(fd, data, len);
	if (rc == 0 && fchmod(fd, (mode_t)mode) != 0)
		rc = -1;
	if (rc == 0 && fsync(fd) != 0)
		rc = -1;
	int e = errno;
	if (close(fd) != 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc == 0 && rename(tmp, path) != 0) {
		rc = -1;
		e = errno;
	}
	if (rc != 0) {
		cli_set_error("%s: %s", path, strerror(e));
		unlink(tmp);
	} else {
		fsync_parent_dir(path);
	}
	free(tmp);
	return rc;
}

uint64_t hash_bytes(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 1469598103934665603ull ^ seed;
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	return h;
}
