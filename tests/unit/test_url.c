/* URL parsing (export/url.c): http, https and unix URLs, and bad ones. */
#include <string.h>

#include "check.h"
#include "export/url.h"

static bool parse(const char *s, struct export_url *u) { return export_url_parse(s, strlen(s), u); }

static void test_http_urls(void)
{
	struct export_url u;
	CHECK(parse("http://localhost:8126", &u));
	CHECK(u.scheme == EXPORT_URL_HTTP && strcmp(u.host, "localhost") == 0 && u.port == 8126);
	CHECK(strcmp(u.path, "") == 0 && !u.host_is_ipv6);
	CHECK(parse("HTTPS://intake.profile.datadoghq.eu/api/v2/profile", &u));
	CHECK(u.scheme == EXPORT_URL_HTTPS && u.port == 443);
	CHECK(strcmp(u.host, "intake.profile.datadoghq.eu") == 0);
	CHECK(strcmp(u.path, "/api/v2/profile") == 0);
	CHECK(parse("http://10.0.0.7", &u) && u.port == 80 && strcmp(u.host, "10.0.0.7") == 0);
	CHECK(parse("http://[::1]:4040/p?x=1", &u));
	CHECK(u.host_is_ipv6 && strcmp(u.host, "::1") == 0 && u.port == 4040);
	CHECK(strcmp(u.path, "/p?x=1") == 0);
	CHECK(parse("http://host?q", &u) && strcmp(u.path, "?q") == 0);
}

static void test_unix_urls(void)
{
	struct export_url u;
	CHECK(parse("unix:///var/run/datadog/apm.socket", &u));
	CHECK(u.scheme == EXPORT_URL_UNIX && strcmp(u.path, "/var/run/datadog/apm.socket") == 0);
	CHECK(u.host[0] == '\0' && u.port == 0);
	CHECK(!parse("unix://", &u));
	CHECK(!parse("unix:///", &u));
	CHECK(!parse("unix://relative/path", &u));
}

static void test_bad_urls(void)
{
	struct export_url u;
	static const char *const bad[] = {
		"", "localhost:8126", "ftp://x", "http://", "http://:80", "http://h:0",
		"http://h:65536", "http://h:12a", "http://h:", "http://user:pw@h/", "http://h/a b",
		"http://h/#frag", "http://[::1", "http://[zz]/", "http://h\r\nX: y", "http://h_%/",
		"http://[1.2.3.4]/", "http://h:123456",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool ok = parse(bad[i], &u);
		if (ok)
			fprintf(stderr, "  accepted %s\n", bad[i]);
		CHECK(!ok);
	}
	char long_host[400];
	memset(long_host, 'a', sizeof(long_host));
	memcpy(long_host, "http://", 7);
	long_host[sizeof(long_host) - 1] = '\0';
	CHECK(!parse(long_host, &u));
}

int main(void)
{
	RUN(test_http_urls);
	RUN(test_unix_urls);
	RUN(test_bad_urls);
	return CHECK_DONE();
}
