/* The Datadog event.json and tags (export/datadog.c). */
#include <string.h>

#include "check.h"
#include "export/datadog.h"
#include "export_config.h"

static void test_event_json(void)
{
	struct sw_config cfg;
	fill_cfg(&cfg);
	static const struct sw_endpoint_count counts[2] = {{"GET /a", 3}, {"POST \"b\"", 1}};
	struct sw_export_batch batch = {
		.start_ns = 1767225540000000001ull,
		.end_ns = 1767225600123456789ull,
		.pid = 42,
		.runtime_id = "rid-1",
		.endpoint_counts = counts,
		.n_endpoint_counts = 2,
	};
	struct rt_buf b = {0};
	struct export_datadog_info info = {"2025-12-31T23:58:00.000000000Z", "Linux 6.1 #1"};
	export_datadog_event_json(&cfg, "host\n1", &info, &batch, &b);
	rt_buf_append_byte(&b, 0);
	CHECK(!b.failed);
	const char *want = "{\"attachments\":[\"profile.pprof\"],\"tags_profiler\":\"service:my\\\"svc_x,"
			   "env:prod,language:native,runtime-id:rid-1,profiler_version:" STOWAWAY_VERSION
			   ",host:host\\n1,process_id:42,team:a,k:v\\\\w,version:kept\",\"start\":"
			   "\"2025-12-31T23:59:00.000000001Z\",\"end\":\"2026-01-01T00:00:00.123456789Z\","
			   "\"family\":\"native\",\"version\":\"4\",\"endpoint_counts\":{\"GET /a\":3,"
			   "\"POST \\\"b\\\"\":1},\"internal\":{\"profiler_version\":\"" STOWAWAY_VERSION "\"},"
			   "\"info\":{\"application\":{\"start_time\":\"2025-12-31T23:58:00.000000000Z\","
			   "\"service\":\"my\\\"svc,x\",\"env\":\"prod\",\"version\":\"\"},\"platform\":"
			   "{\"hostname\":\"host\\n1\",\"kernel\":\"Linux 6.1 #1\"},\"runtime\":{\"engine\":"
			   "\"native\"},\"profiler\":{\"version\":\"" STOWAWAY_VERSION "\",\"timeline_enabled\":"
			   "false}}}";
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
