/* Fuzz the /proc/self/cgroup parsers: container id and cgroup node path. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[EXPORT_CONTAINER_ID_MAX];
	if (export_container_id_parse((const char *)data, size, id, sizeof(id))) {
		size_t n = strnlen(id, sizeof(id));
		if (n >= sizeof(id) || (n != 64 && n != 36 && n != 28 && (n < 34 || n > 43)))
			__builtin_trap();
	}
	char node[64];
	if (export_cgroup_node_path((const char *)data, size, node, sizeof(node)) &&
	    strnlen(node, sizeof(node)) >= sizeof(node))
		__builtin_trap();
	char small[10];
	if (export_container_id_parse((const char *)data, size, small, sizeof(small)))
		__builtin_trap(); /* no id fits in 10 bytes */
	return 0;
}
