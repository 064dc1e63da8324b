# The aarch64 build and its tests under qemu-user (tests/integration/aarch64.sh,
# docs/arm64.md).  On the host build, `make test-build` also cross-builds the
# library and CLI (a `make ARCH=aarch64` sub-make), the aarch64 workloads the
# known-answer tests run, and one x86-64 launcher per workload that runs it
# under qemu-aarch64-static.
ifeq ($(ARCH),$(HOST_ARCH))
ifneq ($(HOST_ARCH),aarch64)
A64       := build/aarch64
A64_WL    := $(A64)/workloads
A64_RUN   := $(A64)/run
A64_CC    := aarch64-linux-gnu-gcc
# libgcc's outline atomics need glibc's __getauxval: inline them on musl.
A64_MUSL  := aarch64-linux-musl-gcc -mno-outline-atomics
A64_FLAGS := -O2 -g -Wall -Wextra -Werror

A64_PROGS := cpu_split-fp cpu_split-nofp cpu_split-musl-fp cpu_split-musl-nofp cpu_split-pac \
	alloc_known alloc_known-musl wall_torture wall_torture-musl prefork prefork-musl \
	hello hello-musl pvr_probe demo demo-musl

# After the host library: that build unpacks the mbedTLS source both share
# (build/vendor), so two makes never unpack it at once.
.PHONY: aarch64-build
aarch64-build: $(BUILD)/libstowaway.so
	@$(MAKE) --no-print-directory ARCH=aarch64 lib cli

$(A64)/libstowaway.so $(A64)/stowaway: aarch64-build

$(A64_WL)/cpu_split-fp: tests/workloads/cpu_split.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread
$(A64_WL)/cpu_split-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) -fomit-frame-pointer $< -o $@ -lpthread
# Return addresses signed with pointer authentication (qemu emulates PAuth
# with random keys): the unwinder must strip them.
$(A64_WL)/cpu_split-pac: tests/workloads/cpu_split.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) -fomit-frame-pointer -mbranch-protection=standard $< -o $@ -lpthread
$(A64_WL)/cpu_split-musl-fp: tests/workloads/cpu_split.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) -fno-omit-frame-pointer $< -o $@
$(A64_WL)/cpu_split-musl-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) -fomit-frame-pointer $< -o $@
$(A64_WL)/alloc_known: tests/workloads/alloc_known.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) -fno-omit-frame-pointer -fno-builtin $< -o $@
$(A64_WL)/alloc_known-musl: tests/workloads/alloc_known.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) -fno-omit-frame-pointer -fno-builtin $< -o $@
$(A64_WL)/wall_torture: tests/workloads/wall_torture.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) $< -o $@ -lpthread
$(A64_WL)/wall_torture-musl: tests/workloads/wall_torture.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) $< -o $@
$(A64_WL)/prefork: tests/workloads/prefork.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) $< -o $@ -lpthread
$(A64_WL)/prefork-musl: tests/workloads/prefork.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) $< -o $@
$(A64_WL)/hello: tests/workloads/hello.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) $< -o $@ -lpthread
$(A64_WL)/hello-musl: tests/workloads/hello.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) $< -o $@

$(A64_WL)/demo: tests/workloads/demo.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread
$(A64_WL)/demo-musl: tests/workloads/demo.c
	@mkdir -p $(dir $@)
	$(A64_MUSL) $(A64_FLAGS) -fno-omit-frame-pointer $< -o $@

$(A64_WL)/pvr_probe: tests/workloads/pvr_probe.c
	@mkdir -p $(dir $@)
	$(A64_CC) $(A64_FLAGS) $< -o $@

$(A64)/qemu_launch: tests/workloads/qemu_launch.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=gnu11 -O2 -static -Wall -Wextra -Werror $< -o $@
$(A64_RUN)/%: $(A64)/qemu_launch $(A64_WL)/%
	@mkdir -p $(dir $@)
	cp $< $@

TEST_PROGRAMS += aarch64-build $(addprefix $(A64_RUN)/,$(A64_PROGS))
endif
endif
