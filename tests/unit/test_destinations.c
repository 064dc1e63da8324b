/* Where Datadog profiles go, as Datadog's libraries choose: the intake only
 * with DD_PROFILING_AGENTLESS=true, the agent's socket when it exists, a
 * DD_TRACE_AGENT_URL path kept. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "config/config.h"

static const char *const vars[] = {
	"DD_API_KEY", "DD_PROFILING_AGENTLESS", "DD_AGENT_HOST", "DD_TRACE_AGENT_PORT",
	"DD_TRACE_AGENT_URL", "STOWAWAY_AGENT_SOCKET", "STOWAWAY_OUTPUT_DIR",
	"STOWAWAY_PYROSCOPE_URL", "DD_EXTERNAL_ENV",
};

static struct sw_config cfg;

static void load(const char *const *kv)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	for (; kv && kv[0]; kv += 2)
		setenv(kv[0], kv[1], 1);
	config_load(&cfg, "dest");
}

static void test_api_key_alone_goes_to_the_agent(void)
{
	const char *const e[] = {"DD_API_KEY", "k", "STOWAWAY_AGENT_SOCKET", "/nonexistent/s", NULL};
	load(e);
	CHECK(cfg.agent_enabled);
	CHECK(strcmp(cfg.agent_url, "http://localhost:8126") == 0);
	CHECK(cfg.api_key[0] == '\0'); /* never sent to an agent */
	CHECK(cfg.api_key_ignored_for_agent);
}

static void test_agentless_only_when_asked(void)
{
	const char *const e[] = {"DD_API_KEY", "k", "DD_PROFILING_AGENTLESS", "true", NULL};
	load(e);
	CHECK(!cfg.agent_enabled);
	CHECK(strcmp(cfg.api_key, "k") == 0);
	CHECK(!cfg.api_key_ignored_for_agent);
	/* Agentless asked without a key: the agent. */
	const char *const f[] = {"DD_PROFILING_AGENTLESS", "true", NULL};
	load(f);
	CHECK(cfg.agent_enabled && cfg.api_key[0] == '\0');
}

static void test_default_socket(void)
{
	char path[] = "/tmp/stowaway-sockXXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	const char *const e[] = {"STOWAWAY_AGENT_SOCKET", path, NULL};
	load(e);
	char want[64];
	snprintf(want, sizeof(want), "unix://%s", path);
	CHECK(cfg.agent_enabled && strcmp(cfg.agent_url, want) == 0);
	/* An agent setting wins over the socket. */
	const char *const f[] = {"STOWAWAY_AGENT_SOCKET", path, "DD_AGENT_HOST", "dd-agent", NULL};
	load(f);
	CHECK(strcmp(cfg.agent_url, "http://dd-agent:8126") == 0);
	const char *const g[] = {"STOWAWAY_AGENT_SOCKET", path, "DD_TRACE_AGENT_PORT", "9126", NULL};
	load(g);
	CHECK(strcmp(cfg.agent_url, "http://localhost:9126") == 0);
	const char *const h[] = {"STOWAWAY_AGENT_SOCKET", path, "DD_TRACE_AGENT_URL",
				 "http://10.0.0.1:8126/prefix/", NULL};
	load(h);
	CHECK(strcmp(cfg.agent_url, "http://10.0.0.1:8126/prefix/") == 0);
	close(fd);
	unlink(path);
}

int main(void)
{
	RUN(test_api_key_alone_goes_to_the_agent);
	RUN(test_agentless_only_when_asked);
	RUN(test_default_socket);
	return CHECK_DONE();
}
