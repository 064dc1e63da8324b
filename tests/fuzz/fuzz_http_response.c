/* Fuzz the HTTP response parser: any bytes, any split point, both eof
 * states; the result must be consistent and the body string terminated. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "export/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_response r;
	enum http_parse_result full = http_response_parse(data, size, true, &r);
	if (full == HTTP_PARSE_INCOMPLETE)
		__builtin_trap(); /* at end of stream nothing is incomplete */
	if (full == HTTP_PARSE_DONE && (r.status < 100 || r.status > 999))
		__builtin_trap();
	if (strlen(r.body) >= sizeof(r.body) || strlen(r.reason) >= sizeof(r.reason))
		__builtin_trap();
	/* A prefix never completes a response that the whole input makes an error. */
	size_t cut = size ? data[0] % (size + 1) : 0;
	enum http_parse_result part = http_response_parse(data, cut, false, &r);
	if (part == HTTP_PARSE_DONE && cut == size && full == HTTP_PARSE_ERROR)
		__builtin_trap();
	return 0;
}
