/* Logging: one "stowaway: ..." line per message, one write(2) to fd 2, so
 * lines from several threads (and the host's own output) never interleave
 * mid-line.  Signal-safe (no allocation, no lock). */
#include "rt/rt.h"
#include "rt/sys.h"

static atomic_int log_level = RT_LOG_WARN;

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
	(void)rt_write_all(2, line, n);
}
