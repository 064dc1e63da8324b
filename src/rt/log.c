/* Logging: one "stowaway: ..." line per message, one write(2) to the
 * program's fd 2, so lines from several threads (and the host's own output)
 * never interleave mid-line.  A thread of ours on a private descriptor
 * table writes through a descriptor it takes for the line.  Signal-safe (no
 * allocation, no lock). */
#include "rt/rt.h"
#include "rt/sys.h"

static atomic_int log_level = RT_LOG_WARN;
static _Atomic(rt_log_redirect_fn) log_redirect;

void rt_log_set_redirect(rt_log_redirect_fn fn) { atomic_store(&log_redirect, fn); }

void rt_log_set_level(enum rt_log_level level) { atomic_store(&log_level, (int)level); }
enum rt_log_level rt_log_get_level(void) { return (enum rt_log_level)atomic_load(&log_level); }

void rt_log(enum rt_log_level level, const char *fmt, ...)
{
	if ((int)level > atomic_load(&log_level))
		return;
	static const char *const names[] = { "error: ", "warning: ", "", "debug: " };
	char line[512];
	size_t n = rt_snprintf(line, sizeof(line), "stowaway: %s", names[level]);
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	va_list ap;
	va_start(ap, fmt);
	size_t m = rt_vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	n += RT_MIN(m, sizeof(line) - n - 2);
	/* One message is one line: fold embedded newlines. */
	for (size_t i = 0; i < n; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[n++] = '\n';
	rt_log_redirect_fn redirect = atomic_load(&log_redirect);
	if (redirect && redirect(line, n))
		return;
	(void)rt_write_all(2, line, n);
}
