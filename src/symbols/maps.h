/* /proc/self/maps: the one reader of the file, and a parser for its lines
 * (pure functions over a byte buffer, so they can be fuzzed). */
#ifndef STOWAWAY_SYMBOLS_MAPS_H
#define STOWAWAY_SYMBOLS_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAPS_PERM_READ 1u
#define MAPS_PERM_WRITE 2u
#define MAPS_PERM_EXEC 4u
#define MAPS_PERM_SHARED 8u

struct maps_entry {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	uint32_t perms; /* MAPS_PERM_* */
	/* Path as it appears (may be "", "[stack]", "/x (deleted)"); points into
	 * the buffer, not terminated: use path_len. */
	const char *path;
	size_t path_len;
};

struct rt_buf;
/* Appends the whole of /proc/self/maps to b (cut at 64 MiB, about 400k
 * mappings).  False if it cannot be opened or read, or b failed to grow.
 * Not signal-safe. */
bool maps_read_self(struct rt_buf *b);

/* The file behind a mapping, mapped read-only whole. */
struct maps_file {
	const uint8_t *data;
	size_t size;
};
/* Maps `path` if it is still the file of mapping e (same device and inode)
 * and holds at least an ELF header (at most 4 GiB).  False otherwise.
 * Undo with maps_unmap_file. */
bool maps_map_file(const struct maps_entry *e, const char *path, struct maps_file *out);
void maps_unmap_file(struct maps_file *f);

/* Parses one line (without its newline) of `len` bytes.  False if malformed. */
bool maps_parse_line(const char *line, size_t len, struct maps_entry *out);

/* Iterates the lines of a whole maps text of `len` bytes.  *pos starts at 0.
 * Returns false at the end; malformed lines are skipped. */
bool maps_next(const char *text, size_t len, size_t *pos, struct maps_entry *out);

/* The entry's permissions as ELF segment flags (PF_R | PF_W | PF_X), for
 * elf_load_bias(). */
uint32_t maps_elf_flags(const struct maps_entry *e);

#endif
