/* The Pyroscope ingest target (export/pyroscope.c). */
#include <string.h>

#include "check.h"
#include "export/pyroscope.h"
#include "export_config.h"

static void test_pyroscope_target(void)
{
	struct sw_config cfg;
	fill_cfg(&cfg);
	struct rt_buf b = {0};
	export_pyroscope_target(&cfg, "/prefix/", SW_KIND_CPU, 1000000000000ull, 1060500000000ull,
				&b);
	rt_buf_append_byte(&b, 0);
	const char *want = "/prefix/ingest?name=my_svc_x%7Benv%3Dprod%2Cteam%3Da%2Ck%3Dv_w%2C"
			   "service%3Ddup%2Cversion%3Dkept%7D"
			   "&from=1000&until=1061&format=pprof&spyName=stowaway&sampleRate=100";
	if (strcmp((char *)b.data, want) != 0)
		fprintf(stderr, "  got  %s\n  want %s\n", (char *)b.data, want);
	CHECK(strcmp((char *)b.data, want) == 0);
	rt_buf_reset(&b);
	export_pyroscope_target(&cfg, "", SW_KIND_WALL, 0, 0, &b);
	rt_buf_append_byte(&b, 0);
	CHECK(strncmp((char *)b.data, "/ingest?name=", 13) == 0);
	CHECK(strstr((char *)b.data, "sampleRate") == NULL);
	rt_buf_free(&b);
}

int main(void)
{
	RUN(test_pyroscope_target);
	return CHECK_DONE();
}
