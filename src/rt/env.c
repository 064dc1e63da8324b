/* Environment lookup through the host's `environ` (a weak reference), with
 * /proc/self/environ as the fallback when the host does not export it. */
#include "rt/rt.h"
#include "rt/host.h"

static const char *lookup(char *const *env, const char *name)
{
	size_t n = rt_strlen(name);
	for (size_t i = 0; i < 100000 && env[i]; i++) {
		if (rt_strncmp(env[i], name, n) == 0 && env[i][n] == '=')
			return env[i] + n + 1;
	}
	return NULL;
}

/* Filled once, on first use without `environ`; our memory, never freed. */
static char *proc_environ_data;
static char **proc_environ_vec;

static void load_proc_environ(void)
{
	const size_t cap = 256 * 1024;
	char *data = rt_malloc(cap);
	if (!data)
		return;
	long n = rt_read_file("/proc/self/environ", data, cap);
	if (n < 0) {
		rt_free(data);
		return;
	}
	size_t count = 0;
	for (long i = 0; i < n; i++)
		count += data[i] == 0;
	char **vec = rt_calloc(count + 2, sizeof(char *));
	if (!vec) {
		rt_free(data);
		return;
	}
	size_t k = 0;
	for (long i = 0; i < n && k <= count; i++) {
		if (i == 0 || data[i - 1] == 0)
			vec[k++] = data + i;
	}
	proc_environ_data = data;
	proc_environ_vec = vec;
}

const char *rt_getenv(const char *name)
{
	if (&environ != NULL && environ != NULL)
		return lookup(environ, name);
	if (!proc_environ_vec)
		load_proc_environ();
	return proc_environ_vec ? lookup(proc_environ_vec, name) : NULL;
}
