/* Container ids from /proc/self/cgroup, for the Datadog-Container-ID header. */
#include <string.h>

#include "check.h"
#include "export/cgroup.h"

#define ID64 "3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860"

static const char *id_of(const char *text, char *out)
{
	out[0] = '\0';
	if (!export_container_id_parse(text, strlen(text), out, EXPORT_CONTAINER_ID_MAX))
		return NULL;
	return out;
}

static void test_cgroup_v1(void)
{
	char id[EXPORT_CONTAINER_ID_MAX];
	const char *docker = "12:memory:/docker/" ID64 "\n11:cpu,cpuacct:/docker/" ID64 "\n";
	CHECK(id_of(docker, id) && strcmp(id, ID64) == 0);
	const char *kube = "4:memory:/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" ID64
			   "\n1:name=systemd:/\n";
	CHECK(id_of(kube, id) && strcmp(id, ID64) == 0);
	const char *ecs = "9:perf_event:/ecs/haissam-ecs-classic/5a0d5ceddf6c44c1928d367a815d890f/"
			  "38fac3e99302b3622be089dd41e7ccf38aff368a86cc339972075136ee2710ce\n";
	CHECK(id_of(ecs, id) &&
	      strcmp(id, "38fac3e99302b3622be089dd41e7ccf38aff368a86cc339972075136ee2710ce") == 0);
	const char *ecs_task = "2:cpu:/ecs/55091c13-b8cf-4801-b527-f4601742204d/"
			       "432624d2150b349fe35ba397284dea788c2bf66b885d14dfc1569b01890ca7da\n";
	CHECK(id_of(ecs_task, id) && strlen(id) == 64);
	const char *fargate_ecs = "1:name=systemd:/ecs/34dc0b5e626f2c5c4c5170e34b10e765-1234567890\n";
	CHECK(id_of(fargate_ecs, id) && strcmp(id, "34dc0b5e626f2c5c4c5170e34b10e765-1234567890") == 0);
}

static void test_cgroup_v2_scopes(void)
{
	char id[EXPORT_CONTAINER_ID_MAX];
	static const char *const scopes[] = {
		"0::/system.slice/docker-" ID64 ".scope\n",
		"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2c48913c_b29f_11e7_"
		"9350_020c00000014.slice/cri-containerd-" ID64 ".scope\n",
		"0::/kubepods.slice/kubepods-pod1.slice/crio-" ID64 ".scope\n",
		"0::/machine.slice/libpod-" ID64 ".scope/container\n",
		"1:name=systemd:/docker/" ID64 "\n0::/\n",
	};
	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		bool ok = id_of(scopes[i], id) && strcmp(id, ID64) == 0;
		if (!ok)
			fprintf(stderr, "  scope #%zu: got '%s'\n", i, id);
		CHECK(ok);
	}
	const char *uuid = "1:name=systemd:/uuid/34dc0b5e-626f-2c5c-4c51-70e34b10e765\n";
	CHECK(id_of(uuid, id) && strcmp(id, "34dc0b5e-626f-2c5c-4c51-70e34b10e765") == 0);
}

static void test_no_container(void)
{
	char id[EXPORT_CONTAINER_ID_MAX];
	static const char *const none[] = {
		"0::/\n",
		"0::/user.slice/user-1000.slice/session-2.scope\n",
		"4:memory:/process_api/fb3d879d90e3f125d6eb4454ebe05239\n",
		"0::/kubepods.slice/kubepods-besteffort-pod3d274242_8ee0_11e9_a8a6_1e68d864ef1a.slice\n",
		"0::/docker/" ID64 "0\n", /* 65 hex digits */
		"0::/docker/3726184226F5D3147C25FDEAB5B60097E378E8A720503A5E19ECFDF29F869860\n",
		"no colons at all\n",
		"",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		bool found = id_of(none[i], id) != NULL;
		if (found)
			fprintf(stderr, "  case #%zu: found '%s'\n", i, id);
		CHECK(!found);
	}
	/* A too-small output buffer is never overrun. */
	char small[8];
	CHECK(!export_container_id_parse("0::/docker/" ID64, strlen("0::/docker/" ID64), small,
					 sizeof(small)));
}

static void test_pcf(void)
{
	char id[EXPORT_CONTAINER_ID_MAX];
	const char *pcf = "1:name=systemd:/system.slice/garden.service/garden/6f265890-5165-7fab-6b52-18d1\n";
	CHECK(id_of(pcf, id) && strcmp(id, "6f265890-5165-7fab-6b52-18d1") == 0);
	/* A 64-hex id on another line still wins over the short form. */
	const char *both = "2:cpu:/garden/6f265890-5165-7fab-6b52-18d1\n1:memory:/docker/" ID64 "\n";
	CHECK(id_of(both, id) && strcmp(id, ID64) == 0);
	CHECK(!id_of("1:cpu:/garden/6f265890-5165-7fab-6b52-18d\n", id));
}

static const char *node_of(const char *text, char *out, size_t cap)
{
	if (!export_cgroup_node_path(text, strlen(text), out, cap))
		return NULL;
	return out;
}

static void test_node_path(void)
{
	char p[256];
	/* cgroup v2: the unified line. */
	CHECK(node_of("0::/kubepods.slice/pod1.slice/cri-x.scope\n", p, sizeof(p)) &&
	      strcmp(p, "kubepods.slice/pod1.slice/cri-x.scope") == 0);
	CHECK(node_of("0::/\n", p, sizeof(p)) && strcmp(p, "") == 0);
	/* cgroup v1: the memory controller wins, wherever it is. */
	const char *v1 = "0::/\n9:cpu,cpuacct:/a\n4:memory:/process_api/17a9\n";
	CHECK(node_of(v1, p, sizeof(p)) && strcmp(p, "memory/process_api/17a9") == 0);
	CHECK(node_of("4:blkio,memory:/x\n", p, sizeof(p)) && strcmp(p, "memory/x") == 0);
	/* Neither: nothing. */
	CHECK(!node_of("9:cpu:/a\n", p, sizeof(p)));
	CHECK(!node_of("garbage\n1:2:3:4\n", p, sizeof(p)));
	/* Never overruns. */
	CHECK(!node_of("0::/0123456789\n", p, 8));
}

int main(void)
{
	RUN(test_pcf);
	RUN(test_node_path);
	RUN(test_cgroup_v1);
	RUN(test_cgroup_v2_scopes);
	RUN(test_no_container);
	return CHECK_DONE();
}
