/* stowaway: the command-line tool.  Runs programs with the profiler
 * preloaded, installs the library for init containers, and reads profiles
 * offline (report, flame, folded, diff, convert). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/symbolize.h"
#include "cli/util.h"

#define LIB_NAME "libstowaway.so"
#define MAX_INSTALL_FILE ((size_t)256 << 20)

static const char usage[] =
	"usage: stowaway COMMAND [ARGS]\n"
	"\n"
	"  version                      print the version\n"
	"  run [--out DIR] [--service NAME] -- CMD [ARGS...]\n"
	"                               run CMD with the profiler preloaded and enabled\n"
	"  install DIR                  copy " LIB_NAME " and stowaway into DIR (atomic)\n"
	"  report PATH...               top functions by flat and cumulative value\n"
	"  flame PATH... -o OUT.svg     flame graph (--html -o OUT.html: interactive page)\n"
	"  folded PATH... [-o OUT]      folded stacks (root;...;leaf value)\n"
	"  diff BASE NEW                functions whose share grew and shrank\n"
	"  convert IN OUT               pprof <-> folded, by extension (.folded/.txt)\n"
	"  symbolize PATH... --debug-dir DIR... [-o OUT]\n"
	"                               fill names, file:line and inlined frames from debug\n"
	"                               files under DIR (matched by build id)\n"
	"  help                         this text\n"
	"\n"
	"PATH: pprof files (.pb.gz or raw), folded files (.folded, .collapsed, .txt)\n"
	"or directories of them.  Profiles with the same sample types are merged.\n"
	"Filters (report, flame, folded, diff, convert):\n"
	"  --sample-index NAME|N   sample type (default: the profile's default, else the last)\n"
	"  --since T  --until T    profile start time: Unix seconds, RFC 3339 or an age (15m, 2h)\n"
	"  --thread NAME|ID        samples labelled with this thread name or id\n"
	"  --tag KEY=VALUE         samples with this label (repeatable)\n"
	"  --focus REGEX           stacks with a function matching REGEX\n"
	"report/diff: --top N (default 20, 0: all), --cum (sort/compare by cumulative), --raw\n"
	"report/flame/folded: --debug-dir DIR symbolizes stripped binaries' frames first\n"
	"flame: --title TEXT.  Environment: STOWAWAY_LIB overrides the library path.\n";

static int fail(const char *fmt, const char *arg)
{
	fputs("stowaway: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 1;
}

/* The directory of our own executable, from /proc/self/exe. */
static char *self_path(void)
{
	size_t cap = 256;
	for (int attempt = 0; attempt < 8; attempt++, cap *= 4) {
		char *buf = xmalloc(cap);
		ssize_t n = readlink("/proc/self/exe", buf, cap);
		if (n < 0) {
			free(buf);
			return NULL;
		}
		if ((size_t)n < cap) {
			buf[n] = '\0';
			return buf;
		}
		free(buf);
	}
	return NULL;
}

/* $STOWAWAY_LIB, else libstowaway.so beside the executable. */
static char *find_library(void)
{
	const char *env = getenv("STOWAWAY_LIB");
	if (env && env[0]) {
		if (access(env, R_OK) != 0) {
			cli_set_error("STOWAWAY_LIB=%s: %s", env, strerror(errno));
			return NULL;
		}
		return xstrndup(env, strlen(env));
	}
	char *self = self_path();
	if (!self) {
		cli_set_error("cannot read /proc/self/exe to find %s; set STOWAWAY_LIB", LIB_NAME);
		return NULL;
	}
	char *slash = strrchr(self, '/');
	size_t dir_len = slash ? (size_t)(slash - self) : 0;
	size_t len = dir_len + sizeof(LIB_NAME) + 1;
	char *lib = xmalloc(len);
	snprintf(lib, len, "%.*s/%s", (int)dir_len, self, LIB_NAME);
	free(self);
	if (access(lib, R_OK) != 0) {
		cli_set_error("%s: %s (put it beside stowaway or set STOWAWAY_LIB)", lib, strerror(errno));
		free(lib);
		return NULL;
	}
	return lib;
}

/* mkdir -p with mode 0755; an existing directory is fine. */
static int make_dirs(const char *path)
{
	char *copy = xstrndup(path, strlen(path));
	int rc = 0;
	for (char *p = copy + 1; rc == 0; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) != 0 && errno != EEXIST)
			rc = cli_fail("%s: %s", copy, strerror(errno));
		*p = c;
		if (c == '\0')
			break;
	}
	free(copy);
	return rc;
}

/* The file execvp would run for cmd: cmd itself if it names a path, else
 * the first executable regular file of that name in PATH; NULL if none. */
static char *command_file(const char *cmd)
{
	if (strchr(cmd, '/'))
		return strdup(cmd);
	const char *path = getenv("PATH");
	if (!path || !path[0])
		path = "/usr/local/bin:/bin:/usr/bin";
	for (const char *p = path;;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct cli_buf f = {0};
		buf_printf(&f, "%.*s/%s", (int)len, len ? p : ".", cmd);
		buf_append(&f, "", 1);
		struct stat st;
		if (stat((const char *)f.data, &st) == 0 && S_ISREG(st.st_mode) &&
		    access((const char *)f.data, X_OK) == 0)
			return (char *)f.data;
		buf_free(&f);
		if (!end)
			return NULL;
		p = end + 1;
	}
}

/* Whether file is a 64-bit ELF executable without a program interpreter
 * (PT_INTERP): the kernel starts it directly, no dynamic loader reads
 * LD_PRELOAD, and the library never loads. */
static bool statically_linked(const char *file)
{
	unsigned char h[64], ph[56];
	FILE *f = fopen(file, "rb");
	if (!f)
		return false;
	bool is_static = false;
	if (fread(h, 1, sizeof(h), f) == sizeof(h) && memcmp(h, "\177ELF", 4) == 0 && h[4] == 2 && h[5] == 1) {
		uint64_t phoff;
		uint16_t phentsize, phnum;
		memcpy(&phoff, h + 32, sizeof(phoff));
		memcpy(&phentsize, h + 54, sizeof(phentsize));
		memcpy(&phnum, h + 56, sizeof(phnum));
		bool interp = false, ok = phentsize >= sizeof(ph) && phnum > 0;
		for (uint16_t i = 0; ok && i < phnum && !interp; i++) {
			uint32_t type;
			ok = fseek(f, (long)(phoff + (uint64_t)i * phentsize), SEEK_SET) == 0 &&
			     fread(ph, 1, sizeof(ph), f) == sizeof(ph);
			memcpy(&type, ph, sizeof(type));
			interp = ok && type == 3 /* PT_INTERP */;
		}
		is_static = ok && !interp;
	}
	fclose(f);
	return is_static;
}

static int cmd_run(int argc, char **argv)
{
	const char *out = NULL, *service = NULL;
	int i = 0;
	while (i < argc) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (argv[i][0] != '-')
			break;
		if (strcmp(argv[i], "--out") == 0 || strcmp(argv[i], "--service") == 0) {
			if (i + 1 >= argc)
				return fail("%s needs a value", argv[i]);
			if (argv[i][2] == 'o')
				out = argv[i + 1];
			else
				service = argv[i + 1];
			i += 2;
			continue;
		}
		if (strncmp(argv[i], "--out=", 6) == 0) {
			out = argv[i] + 6;
		} else if (strncmp(argv[i], "--service=", 10) == 0) {
			service = argv[i] + 10;
		} else {
			return fail("run: unknown option %s (usage: stowaway run [--out DIR] [--service NAME] -- CMD ...)",
				    argv[i]);
		}
		i++;
	}
	if (i >= argc)
		return fail("%s", "run needs a command: stowaway run [--out DIR] -- CMD [ARGS...]");
	char *lib = find_library();
	if (!lib)
		return fail("%s", cli_err);
	const char *old = getenv("LD_PRELOAD");
	struct cli_buf preload = {0};
	buf_printf(&preload, "%s%s%s", lib, old && old[0] ? ":" : "", old && old[0] ? old : "");
	buf_append(&preload, "", 1);
	if (setenv("LD_PRELOAD", (const char *)preload.data, 1) != 0 ||
	    setenv("DD_PROFILING_ENABLED", "true", 1) != 0 ||
	    (service && setenv("DD_SERVICE", service, 1) != 0))
		return fail("setenv: %s", strerror(errno));
	if (out) {
		if (make_dirs(out) != 0)
			return fail("%s", cli_err);
		if (setenv("STOWAWAY_OUTPUT_DIR", out, 1) != 0)
			return fail("setenv: %s", strerror(errno));
	}
	buf_free(&preload);
	free(lib);
	char *file = command_file(argv[i]);
	if (file && statically_linked(file))
		fprintf(stderr, "stowaway: %s is statically linked: no dynamic loader reads LD_PRELOAD for "
			"it, so it runs unprofiled (a dynamically linked build of it can be profiled)\n", file);
	free(file);
	execvp(argv[i], argv + i);
	int e = errno;
	fprintf(stderr, "stowaway: %s: %s\n", argv[i], strerror(e));
	return e == ENOENT ? 127 : 126;
}

/* The ELF e_machine of a file's bytes, or -1 if they are not ELF. */
static int elf_machine(const struct cli_buf *b)
{
	if (b->len < 20 || memcmp(b->data, "\177ELF", 4) != 0)
		return -1;
	const unsigned char *h = b->data;
	return h[5] == 2 ? (h[18] << 8) | h[19] : h[18] | (h[19] << 8); /* EI_DATA: big or little */
}

/* Refuses a library built for another architecture than this program's
 * (an init image of the wrong platform): preloaded, it would be refused
 * by a glibc loader but make a musl loader stop every program it starts. */
static int check_same_machine(const char *lib, const char *self)
{
	struct cli_buf l = {0}, me = {0};
	int rc = read_file(lib, MAX_INSTALL_FILE, &l);
	if (rc == 0)
		rc = read_file(self, MAX_INSTALL_FILE, &me);
	if (rc == 0 && elf_machine(&l) != elf_machine(&me))
		rc = cli_fail("install: %s is built for ELF machine %d, this node runs machine %d "
			      "(use the image of this node's platform)", lib, elf_machine(&l),
			      elf_machine(&me));
	buf_free(&l);
	buf_free(&me);
	return rc;
}

static int install_one(const char *src, const char *dir, const char *name)
{
	struct cli_buf data = {0};
	int rc = read_file(src, MAX_INSTALL_FILE, &data);
	if (rc == 0) {
		size_t len = strlen(dir) + strlen(name) + 2;
		char *dst = xmalloc(len);
		snprintf(dst, len, "%s/%s", dir, name);
		rc = write_file_atomic(dst, data.data, data.len, 0755);
		if (rc == 0)
			printf("installed %s\n", dst);
		free(dst);
	}
	buf_free(&data);
	return rc;
}

static int cmd_install(int argc, char **argv)
{
	if (argc != 1 || argv[0][0] == '-')
		return fail("%s", "usage: stowaway install DIR");
	struct stat st;
	if (stat(argv[0], &st) != 0 || !S_ISDIR(st.st_mode))
		return fail("install: %s is not a directory", argv[0]);
	char *lib = find_library();
	if (!lib)
		return fail("%s", cli_err);
	char *self = self_path();
	int rc = self ? check_same_machine(lib, self) : cli_fail("cannot read /proc/self/exe");
	if (rc == 0)
		rc = install_one(lib, argv[0], LIB_NAME);
	if (rc == 0)
		rc = install_one(self, argv[0], "stowaway");
	free(lib);
	free(self);
	return rc == 0 ? 0 : fail("%s", cli_err);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	const char *cmd = argv[1];
	int sub_argc = argc - 2;
	char **sub_argv = argv + 2;
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("stowaway %s\n", STOWAWAY_VERSION);
		return 0;
	}
	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(cmd, "run") == 0)
		return cmd_run(sub_argc, sub_argv);
	if (strcmp(cmd, "install") == 0)
		return cmd_install(sub_argc, sub_argv);
	if (strcmp(cmd, "report") == 0)
		return cmd_report(sub_argc, sub_argv);
	if (strcmp(cmd, "flame") == 0)
		return cmd_flame(sub_argc, sub_argv);
	if (strcmp(cmd, "folded") == 0)
		return cmd_folded(sub_argc, sub_argv);
	if (strcmp(cmd, "diff") == 0)
		return cmd_diff(sub_argc, sub_argv);
	if (strcmp(cmd, "convert") == 0)
		return cmd_convert(sub_argc, sub_argv);
	if (strcmp(cmd, "symbolize") == 0)
		return cmd_symbolize(sub_argc, sub_argv);
	return fail("unknown command \"%s\" (see stowaway help)", cmd);
}
