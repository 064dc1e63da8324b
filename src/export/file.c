/* The file exporter (air-gapped use): one gzip pprof per kind per period in
 * STOWAWAY_OUTPUT_DIR, named <service>.<pid>.<kind>.<seq>.<runtime id[0:8]>.pb.gz,
 * written atomically (an unnamed O_TMPFILE file linked in once synced, or
 * where that is not possible a temporary file renamed; then one fsync of the
 * directory per batch), with a bound on the number of profile files kept
 * (oldest removed first, the directory counted only when the files written
 * since the last count could have taken it over the bound, and by one
 * process of a family of forked processes at a time). */
#include "export/export.h"
#include "rt/rt.h"
#include "rt/sys.h"

#define FILE_SUFFIX ".pb.gz"
#define RETENTION_SCAN_MAX 100000

/* How many more files a process and the processes it forks may write to
 * the directory before one of them counts it again.  One shared page,
 * inherited by fork children: the children of a process-per-connection
 * server each write a file or two and exit, and without it every one of
 * them would read the whole directory. */
struct retention_room {
	atomic_long room;
	/* When the process counting the directory now began (0: none): the
	 * others of the family that run out of room meanwhile leave the count
	 * to it, instead of each reading and sorting the same directory and
	 * removing the same oldest files. */
	_Atomic uint64_t counting_since_ns;
	uint64_t dir_hash; /* the directory and bound it counts for */
};
/* A count older than this is taken over: its process died counting. */
#define COUNT_CLAIM_NS (1000ull * 1000 * 1000)
static struct retention_room *family_room;

struct file_exporter {
	struct sw_exporter base;
	char dir[SW_CFG_PATH];
	char service[64]; /* sanitised for file names */
	uint32_t max_files;
	struct retention_room *room; /* NULL: count at every write */
	atomic_int write_failed_logged;
	/* What this process did, for the debug line at its exit export. */
	uint32_t files_written, dir_scans, dir_sorts, files_removed, counts_left;
};

/* Keeps [A-Za-z0-9._-]; everything else becomes '_'. */
static void sanitize_name(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; in[i] && o + 1 < cap; i++) {
		char c = in[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '.' || c == '_' || c == '-';
		out[o++] = ok ? c : '_';
	}
	if (o == 0)
		out[o++] = '_';
	out[o] = 0;
}

/* Creates the directory and its missing parents (mode 0755). */
static long make_dirs(const char *path)
{
	char tmp[SW_CFG_PATH];
	size_t n = rt_strlcpy(tmp, path, sizeof(tmp));
	if (n >= sizeof(tmp))
		return -ENAMETOOLONG;
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != 0)
			continue;
		char saved = tmp[i];
		tmp[i] = 0;
		long r = sys_mkdirat(AT_FDCWD, tmp, 0755);
		tmp[i] = saved;
		if (r < 0 && r != -EEXIST)
			return r;
	}
	return 0;
}

static const char *errno_name(long e)
{
	switch (-e) {
	case EACCES: return "permission denied";
	case EROFS: return "read-only file system";
	case ENOSPC: return "no space left on device";
	case EDQUOT: return "disk quota exceeded";
	case ENOENT: return "no such directory";
	case ENOTDIR: return "not a directory";
	case ENAMETOOLONG: return "name too long";
	case EIO: return "I/O error";
	default: return "system error";
	}
}

/* fsync's result, where a refusal to sync is not a failure to write: a
 * seccomp filter without fsync (EPERM, ENOSYS) or a file system that does
 * not sync (EINVAL) leaves the profile written, only not yet durable. */
static long sync_result(long r)
{
	if (r != -EPERM && r != -ENOSYS && r != -EINVAL)
		return r;
	rt_log_once(RT_LOG_DEBUG, "file exporter: fsync refused (error %ld): profiles are written "
		    "but not synced", -r);
	return 0;
}

/* Writes and syncs data to fd; 0 or -errno. */
static long write_sync(long fd, const uint8_t *data, size_t len)
{
	long r = rt_write_all((int)fd, data, len);
	return r == 0 ? sync_result(sys_fsync((int)fd)) : r;
}

/* Gives the complete unnamed file fd the name `name` in dirfd, replacing a
 * file of that name (linked under `tmp` first: link cannot replace); 0 or
 * -errno. */
static long link_unnamed(long fd, int dirfd, const char *name, const char *tmp)
{
	/* The calling thread's own table: a thread of ours may have one
	 * apart from the program's, which /proc/self/fd would show. */
	char self[64];
	rt_snprintf(self, sizeof(self), "/proc/self/task/%ld/fd/%ld", sys_gettid(), fd);
	long r = sys_linkat(AT_FDCWD, self, dirfd, name, AT_SYMLINK_FOLLOW);
	if (r != -EEXIST)
		return r;
	r = sys_linkat(AT_FDCWD, self, dirfd, tmp, AT_SYMLINK_FOLLOW);
	if (r == 0)
		r = sys_renameat(dirfd, tmp, dirfd, name);
	if (r < 0)
		(void)sys_unlinkat(dirfd, tmp, 0);
	return r;
}

/* Writes data to dir/name; 0 or -errno.  The data goes to an unnamed file
 * (O_TMPFILE) that gets its name only once complete, so a process that dies
 * or execs while writing leaves nothing behind; where that is not possible
 * (file system without O_TMPFILE, no /proc), to a named temporary file
 * renamed over name, removed on failure.  The caller syncs the directory. */
static long write_atomically(int dirfd, const char *name, const uint8_t *data, size_t len)
{
	char tmp[256];
	rt_snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, sys_gettid());
	long r, fd = sys_openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (fd >= 0) {
		r = write_sync(fd, data, len);
		long linked = r == 0 ? link_unnamed(fd, dirfd, name, tmp) : r;
		long c = sys_close((int)fd);
		if (r < 0)
			return r;
		if (linked == 0)
			return c < 0 ? c : 0;
	}
	fd = sys_openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return fd;
	r = write_sync(fd, data, len);
	long c = sys_close((int)fd);
	if (r == 0 && c < 0)
		r = c;
	if (r == 0)
		r = sys_renameat(dirfd, tmp, dirfd, name);
	if (r < 0)
		(void)sys_unlinkat(dirfd, tmp, 0);
	return r;
}

struct old_file {
	uint64_t mtime_ns;
	char name[200];
};

static bool is_profile_file(const char *name)
{
	size_t n = rt_strlen(name), s = sizeof(FILE_SUFFIX) - 1;
	return name[0] != '.' && n > s && rt_streq(name + n - s, FILE_SUFFIX);
}

/* The number of profile files in dirfd, or -errno. */
static long count_profile_files(int dirfd)
{
	struct rt_dir dir;
	long r = rt_dir_open(&dir, dirfd, ".", RETENTION_SCAN_MAX);
	if (r != 0)
		return r < 0 ? r : -EIO;
	long count = 0;
	for (const char *name; (name = rt_dir_next(&dir)) != NULL;)
		count += is_profile_file(name);
	rt_dir_close(&dir);
	return count;
}

/* Removes the oldest profile files beyond max_files, after a count of the
 * names; only when the directory is over the bound does a second scan read
 * every file's time, and it then removes the excess plus a sixteenth of the
 * bound (at most OLDEST_MAX files in all), so that a directory kept at its
 * bound by many writers (a server forking a process per connection) is
 * sorted about once per sixteenth of the bound written, not at every write.
 * Bounded work: two directory scans, at most OLDEST_MAX deletions, each of
 * the oldest left.  Returns how many profile files the count left in the
 * directory, or -errno. */
enum { OLDEST_MAX = 64 };
static long count_and_trim(struct file_exporter *fe, int dirfd)
{
	fe->dir_scans++;
	long total = count_profile_files(dirfd);
	if (total <= (long)fe->max_files)
		return total;
	uint32_t remove = (uint32_t)RT_MIN((uint64_t)total - fe->max_files + fe->max_files / 16,
					   (uint64_t)OLDEST_MAX);
	struct rt_dir dir;
	if (rt_dir_open(&dir, dirfd, ".", RETENTION_SCAN_MAX) != 0)
		return total;
	fe->dir_sorts++;
	/* Keep the `remove` oldest in a small array, oldest first. */
	struct old_file oldest[OLDEST_MAX];
	uint32_t n_oldest = 0;
	for (const char *name; (name = rt_dir_next(&dir)) != NULL;) {
		if (!is_profile_file(name))
			continue;
		struct statx st = { 0 };
		if (rt_statx(dirfd, name, 0, STATX_MTIME, &st) != 0)
			continue;
		uint64_t m = (uint64_t)st.stx_mtime.tv_sec * RT_NS_PER_SEC + st.stx_mtime.tv_nsec;
		/* Insert into the sorted (oldest first) array, dropping the newest. */
		uint32_t pos = n_oldest;
		while (pos > 0 && oldest[pos - 1].mtime_ns > m)
			pos--;
		if (pos >= remove)
			continue;
		uint32_t last = n_oldest < remove ? n_oldest : remove - 1;
		rt_memmove(&oldest[pos + 1], &oldest[pos], (last - pos) * sizeof(oldest[0]));
		oldest[pos].mtime_ns = m;
		rt_strlcpy(oldest[pos].name, name, sizeof(oldest[pos].name));
		if (n_oldest < remove)
			n_oldest++;
	}
	rt_dir_close(&dir);
	for (uint32_t i = 0; i < n_oldest; i++) {
		bool gone = sys_unlinkat(dirfd, oldest[i].name, 0) == 0;
		fe->files_removed += gone;
		total -= gone;
	}
	return total;
}

/* Keeps the directory within max_files after `written` files were added
 * (0: the batch's writes failed; a count may free space, so it is done).
 * The directory is counted only once the files written since the last
 * count (by this process and those forked from it, see retention_room)
 * could have reached the bound: the count leaves room for the bound minus
 * what it found, at most a sixteenth of the bound, so that writers of
 * other process trees sharing the directory are seen within that many
 * files of ours.  Below a bound of 16 every write counts. */
static void enforce_retention(struct file_exporter *fe, int dirfd, uint32_t written)
{
	if (fe->max_files == 0)
		return;
	struct retention_room *r = fe->room;
	if (r == NULL) {
		(void)count_and_trim(fe, dirfd);
		return;
	}
	if (written && atomic_fetch_sub(&r->room, (long)written) >= (long)written)
		return;
	uint64_t now = rt_monotonic_ns();
	uint64_t since = atomic_load(&r->counting_since_ns);
	if ((since != 0 && now - since < COUNT_CLAIM_NS) ||
	    !atomic_compare_exchange_strong(&r->counting_since_ns, &since, now)) {
		fe->counts_left++; /* another process of the family is counting */
		return;
	}
	long total = count_and_trim(fe, dirfd);
	if (total >= 0) {
		long room = RT_MIN((long)fe->max_files - total, (long)(fe->max_files / 16));
		atomic_store(&r->room, RT_MAX(room, 0L));
	}
	atomic_store(&r->counting_since_ns, 0);
}

static int file_export(struct sw_exporter *self, const struct sw_export_batch *b, uint64_t deadline_ns)
{
	RT_UNUSED(deadline_ns); /* local writes are not interruptible; they are short */
	struct file_exporter *fe = self->state;
	long dirfd = sys_open(fe->dir, O_RDONLY | O_DIRECTORY, 0);
	if (dirfd == -ENOENT && make_dirs(fe->dir) == 0)
		dirfd = sys_open(fe->dir, O_RDONLY | O_DIRECTORY, 0);
	if (dirfd < 0) {
		if (!atomic_exchange(&fe->write_failed_logged, 1))
			rt_warn("cannot open STOWAWAY_OUTPUT_DIR=%s: %s; profiles are not written "
				"there (profiling goes on)", fe->dir, errno_name(dirfd));
		return (int)dirfd;
	}
	int result = 0;
	uint32_t written = 0;
	for (size_t i = 0; i < b->n_items; i++) {
		char name[200];
		/* The runtime id's first 8 hex digits tell process starts apart:
		 * in a container the program is pid 1 after every restart. */
		rt_snprintf(name, sizeof(name), "%s.%u.%s.%05u.%.8s%s", fe->service, b->pid,
			    sw_kind_name(b->items[i].kind), b->seq, b->runtime_id, FILE_SUFFIX);
		long r = write_atomically((int)dirfd, name, b->items[i].gz, b->items[i].len);
		if (r < 0) {
			if (!atomic_exchange(&fe->write_failed_logged, 1))
				rt_warn("cannot write profiles to %s: %s; profiling goes on, "
					"files are skipped", fe->dir, errno_name(r));
			result = (int)r;
		} else {
			written++;
		}
	}
	/* One sync makes every name of the batch durable.  A batch with no
	 * profile (the exit of a short-lived child without samples) leaves the
	 * directory alone: it cannot have pushed it over the bound.  One whose
	 * writes failed still enforces the bound (it may free the space). */
	if (written) {
		long r = sync_result(sys_fsync((int)dirfd));
		if (r < 0)
			result = (int)r;
		fe->files_written += written;
	}
	if (b->n_items)
		enforce_retention(fe, (int)dirfd, written);
	(void)sys_close((int)dirfd);
	if (b->final)
		rt_debug("file exporter: %u files written, %u retention scans (%u left to another "
			 "process counting), %u sorted, %u files removed", fe->files_written,
			 fe->dir_scans, fe->counts_left, fe->dir_sorts, fe->files_removed);
	return result;
}

static void file_destroy(struct sw_exporter *self) { rt_free(self->state); }

/* The room shared with the processes this one forks, for this directory and
 * bound; NULL when no page can be had (then every write counts). */
static struct retention_room *shared_room(const char *dir, uint32_t max_files)
{
	uint64_t h = rt_hash_bytes(rt_hash_mix(RT_HASH_SEED, max_files), dir, rt_strlen(dir));
	if (!family_room) {
		void *page = rt_shared_pages_alloc(sizeof(struct retention_room));
		if (page == NULL)
			return NULL;
		family_room = page;
	}
	if (family_room->dir_hash != h) {
		/* Another directory or bound: nothing is known of this one. */
		atomic_store(&family_room->room, 0);
		family_room->dir_hash = h;
	}
	return family_room;
}

struct sw_exporter *export_file_create(const struct sw_config *cfg)
{
	if (!cfg->output_dir[0])
		return NULL;
	struct file_exporter *fe = rt_calloc(1, sizeof(*fe));
	if (!fe)
		return NULL;
	rt_strlcpy(fe->dir, cfg->output_dir, sizeof(fe->dir));
	sanitize_name(cfg->service, fe->service, sizeof(fe->service));
	fe->max_files = cfg->max_files;
	fe->room = shared_room(fe->dir, fe->max_files);
	fe->base.name = "file";
	fe->base.export_batch = file_export;
	fe->base.destroy = file_destroy;
	fe->base.state = fe;
	/* Made once per process tree: a fork child (a backend per connection)
	 * finds it, one system call instead of one per path component. */
	long r = sys_faccessat(AT_FDCWD, fe->dir, 2 /* W_OK */);
	if (r == -ENOENT) {
		r = make_dirs(fe->dir);
		if (r == 0)
			r = sys_faccessat(AT_FDCWD, fe->dir, 2 /* W_OK */);
	}
	if (r < 0) {
		rt_warn("STOWAWAY_OUTPUT_DIR=%s is not writable: %s; will retry every period",
			fe->dir, errno_name(r));
		atomic_store(&fe->write_failed_logged, 1);
	}
	return &fe->base;
}
