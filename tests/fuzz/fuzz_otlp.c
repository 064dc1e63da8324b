/* Fuzzes the OpenTelemetry inputs: the OTEL_* settings (config/otlp.c) from
 * an environment built from the input, checking that every header line the
 * exporter would send is "Name: value" without control characters; and the
 * pprof -> OTLP translation (encode/otlp.c) on arbitrary bytes, which must
 * refuse or translate without reading out of bounds.  The first input byte
 * chooses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzz_env.h"

#include "config/otlp.h"
#include "encode/otlp.h"

static const char *const names[] = {
	"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
	"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_PROFILES_HEADERS",
};
#define N_NAMES (sizeof(names) / sizeof(names[0]))

static void check_headers(const char *h)
{
	while (*h) {
		const char *eol = strstr(h, "\r\n");
		if (!eol)
			abort();
		const char *colon = memchr(h, ':', (size_t)(eol - h));
		if (!colon || colon == h || colon[1] != ' ')
			abort();
		for (const char *p = h; p < eol; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				abort();
		h = eol + 2;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1) {
		struct otlp_encoder *e = otlp_encoder_create();
		if (!e)
			return 0;
		(void)otlp_add_pprof(e, data + 1, size - 1);
		struct otlp_attribute attr = { "service.name", "fuzz" };
		struct rt_buf out = { 0 };
		(void)otlp_encode_request(e, &attr, 1, "0", &out);
		rt_buf_free(&out);
		otlp_encoder_destroy(e);
		return 0;
	}
	char *text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = 0;
	fuzz_set_env_lines(names, N_NAMES, text);
	static struct sw_config cfg;
	static struct sw_otlp_config otlp;
	strcpy(cfg.service, "fuzz");
	config_otlp_load(&cfg, &otlp);
	check_headers(otlp.headers);
	if (otlp.n_resource > SW_OTLP_MAX_ATTRIBUTES)
		abort();
	free(text);
	return 0;
}
