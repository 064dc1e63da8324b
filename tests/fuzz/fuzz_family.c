/* Fuzz target: the parser of a fork family's inbox slot (profile/family.h),
 * which reads what another process wrote.  The first byte gives the sample
 * count, the rest is the payload.  The parser must never read outside the
 * payload, and every sample it reports added must be in the recorder
 * (values summed over samples never exceed what it was given: nothing
 * invented). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/family.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	uint32_t n = data[0];
	/* An exact-size copy, so ASan sees any read past the payload. */
	size_t len = size - 1;
	uint8_t *payload = malloc(len ? len : 1);
	if (payload == NULL)
		return 0;
	memcpy(payload, data + 1, len);
	struct profile_limits lim = { .max_samples = 256 };
	struct recorder *rec = recorder_create(&lim);
	if (rec != NULL) {
		uint64_t samples = 0;
		(void)family_parse_record(rec, payload, (uint32_t)len, n, &samples);
		if (samples > n)
			abort();
		struct profile *p = recorder_swap(rec);
		if (p != NULL) {
			/* Stored samples (the overflow one included) come from added ones. */
			if (samples == 0 && profile_sample_count(p) != 0)
				abort();
			profile_release(p);
		}
		recorder_destroy(rec);
	}
	free(payload);
	return 0;
}
