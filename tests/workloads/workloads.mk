# Test programs shared by integration tests, benchmarks and the demo.
WL := $(BUILD)/workloads
WL_CFLAGS := -O2 -g -Wall -Wextra -Werror
TEST_PROGRAMS += $(WL)/hello $(WL)/hello-musl $(WL)/throw $(WL)/forkexec $(WL)/demo $(WL)/demo-nofp

$(WL)/hello: tests/workloads/hello.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@ -lpthread

$(WL)/hello-musl: tests/workloads/hello.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) $< -o $@

$(WL)/throw: tests/workloads/throw.cpp
	@mkdir -p $(WL)
	g++ -std=c++17 $(WL_CFLAGS) $< -o $@

$(WL)/forkexec: tests/workloads/forkexec.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@

$(WL)/demo: tests/workloads/demo.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread

$(WL)/demo-nofp: tests/workloads/demo.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -fomit-frame-pointer $< -o $@ -lpthread

TEST_PROGRAMS += $(WL)/introspect $(WL)/introspect-musl
$(WL)/introspect: tests/workloads/introspect.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@

$(WL)/introspect-musl: tests/workloads/introspect.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) $< -o $@
