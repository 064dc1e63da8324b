/* The Datadog event.json and tags (export/datadog.c). */
#include <string.h>

#include "check.h"
#include "export/datadog.h"
#include "export_config.h"

static void test_event_json(void)
{
	struct sw_config cfg;
	fill_cfg(&cfg);
	struct sw_export_batch batch = {
		.start_ns = 1767225540000000001ull,
		.end_ns = 1767225600123456789ull,
		.pid = 42,
		.runtime_id = "rid-1",
	};
	struct rt_buf b = {0};
	export_datadog_event_json(&cfg, "host\n1", &batch, &b);
	rt_buf_append_byte(&b, 0);
	CHECK(!b.failed);
	const char *want = "{\"attachments\":[\"profile.pprof\"],\"tags_profiler\":\"service:my\\\"svc_x,"
			   "env:prod,language:native,runtime-id:rid-1,profiler_version:" STOWAWAY_VERSION
			   ",host:host\\n1,process_id:42,team:a,k:v\\\\w\",\"start\":"
			   "\"2025-12-31T23:59:00.000000001Z\",\"end\":\"2026-01-01T00:00:00.123456789Z\","
			   "\"family\":\"native\",\"version\":\"4\",\"internal\":{},\"info\":{}}";
	if (strcmp((char *)b.data, want) != 0)
		fprintf(stderr, "  got  %s\n  want %s\n", (char *)b.data, want);
	CHECK(strcmp((char *)b.data, want) == 0);
	rt_buf_free(&b);
}

int main(void)
{
	RUN(test_event_json);
	return CHECK_DONE();
}
