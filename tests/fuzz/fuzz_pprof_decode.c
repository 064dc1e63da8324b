/* Fuzz target: the CLI's pprof decoder (gzip or raw) and, for inputs it
 * accepts, the stack model and folded writer built on top of it.  Any
 * input must give a clean error or a result, never a crash or a leak. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/pprof.h"
#include "cli/profiles.h"
#include "cli/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pp_profile prof;
	if (pprof_decode_any(data, size, &prof) != 0)
		return 0;
	struct input in = {.path = (char *)"fuzz", .prof = prof, .kind = (char *)"fuzz"};
	struct input_set set = {.items = &in, .n = 1, .cap = 1};
	struct filters f;
	memset(&f, 0, sizeof(f));
	struct selection sel;
	if (select_kind(&set, "fuzz", &f, &sel) == 0) {
		struct cli_buf out = {0};
		write_folded(&sel, &out);
		buf_free(&out);
	}
	selection_free(&sel);
	pprof_free(&prof);
	return 0;
}
