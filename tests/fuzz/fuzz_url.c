/* Fuzz the URL and IP literal parsers: accepted URLs are well-formed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export/url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct export_url u;
	if (export_url_parse((const char *)data, size, &u)) {
		size_t host = strnlen(u.host, sizeof(u.host));
		size_t path = strnlen(u.path, sizeof(u.path));
		if (host >= sizeof(u.host) || path >= sizeof(u.path))
			__builtin_trap();
		if (u.scheme == EXPORT_URL_UNIX ? (path == 0 || u.path[0] != '/')
						: (host == 0 || u.port == 0))
			__builtin_trap();
		for (size_t i = 0; i < path; i++)
			if ((unsigned char)u.path[i] <= 0x20 || u.path[i] == '#')
				__builtin_trap();
	}
	uint8_t ip[16];
	(void)export_parse_ipv4((const char *)data, size, ip);
	(void)export_parse_ipv6((const char *)data, size, ip);
	return 0;
}
