# Test programs shared by integration tests, benchmarks and the demo.
WL := $(BUILD)/workloads
WL_CFLAGS := -O2 -g -Wall -Wextra -Werror
TEST_PROGRAMS += $(WL)/hello $(WL)/hello-musl $(WL)/throw $(WL)/forkexec $(WL)/demo $(WL)/demo-nofp \
                 $(WL)/demo-musl

$(WL)/hello: tests/workloads/hello.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@ -lpthread

$(WL)/hello-musl: tests/workloads/hello.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) $< -o $@

$(WL)/throw: tests/workloads/throw.cpp
	@mkdir -p $(WL)
	g++ -std=c++17 $(WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(WL)/own_malloc $(WL)/own_malloc-musl $(WL)/own_new
$(WL)/own_malloc: tests/workloads/own_malloc.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@

$(WL)/own_malloc-musl: tests/workloads/own_malloc.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) $< -o $@

$(WL)/own_new: tests/workloads/own_new.cpp
	@mkdir -p $(WL)
	g++ -std=c++17 $(WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(WL)/malloc_address
$(WL)/malloc_address: tests/workloads/malloc_address.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -no-pie -fno-pie $< -o $@

TEST_PROGRAMS += $(WL)/mimalloc_direct
$(WL)/mimalloc_direct: tests/workloads/mimalloc_direct.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@ -lmimalloc

TEST_PROGRAMS += $(WL)/syscall_refused
$(WL)/syscall_refused: tests/workloads/syscall_refused.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@

$(WL)/forkexec: tests/workloads/forkexec.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@

$(WL)/demo: tests/workloads/demo.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread

$(WL)/demo-musl: tests/workloads/demo.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) -fno-omit-frame-pointer $< -o $@

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

TEST_PROGRAMS += $(WL)/short_threads $(WL)/short_threads-musl
$(WL)/short_threads: tests/workloads/short_threads.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@ -lpthread

$(WL)/short_threads-musl: tests/workloads/short_threads.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) $< -o $@

# CPU known-answer workload: glibc and musl, with and without frame
# pointers, and the same source compiled as C++.
CPU_SPLIT := $(WL)/cpu_split-fp $(WL)/cpu_split-nofp $(WL)/cpu_split-musl-fp \
             $(WL)/cpu_split-musl-nofp $(WL)/cpu_split-cxx-nofp
TEST_PROGRAMS += $(CPU_SPLIT)
$(WL)/cpu_split-fp: tests/workloads/cpu_split.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread
$(WL)/cpu_split-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -fomit-frame-pointer $< -o $@ -lpthread
$(WL)/cpu_split-musl-fp: tests/workloads/cpu_split.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) -fno-omit-frame-pointer $< -o $@
$(WL)/cpu_split-musl-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) -fomit-frame-pointer $< -o $@
$(WL)/cpu_split-cxx-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(WL)
	g++ -x c++ $(WL_CFLAGS) -fomit-frame-pointer $< -o $@ -lpthread

TEST_PROGRAMS += $(WL)/prefork $(WL)/prefork-musl
$(WL)/prefork: tests/workloads/prefork.c
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) $< -o $@ -lpthread
$(WL)/prefork-musl: tests/workloads/prefork.c
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) $< -o $@

# The same hotspots binary runs with and without the library (weak API).
TEST_PROGRAMS += $(WL)/hotspots $(WL)/hotspots-musl
$(WL)/hotspots: tests/workloads/hotspots.c src/stowaway.h
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -Isrc $< -o $@ -lpthread
$(WL)/hotspots-musl: tests/workloads/hotspots.c src/stowaway.h
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) -Isrc $< -o $@

TEST_PROGRAMS += $(WL)/span_waits $(WL)/span_waits-musl
$(WL)/span_waits: tests/workloads/span_waits.c src/stowaway.h
	@mkdir -p $(WL)
	$(CC) $(WL_CFLAGS) -Isrc $< -o $@ -lpthread
$(WL)/span_waits-musl: tests/workloads/span_waits.c src/stowaway.h
	@mkdir -p $(WL)
	$(MUSL_CC) $(WL_CFLAGS) -Isrc $< -o $@
