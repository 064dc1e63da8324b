# Memory guard workloads: glibc and musl.
MG_WL := $(BUILD)/workloads
TEST_PROGRAMS += $(MG_WL)/memleak $(MG_WL)/memleak-musl

$(MG_WL)/memleak: tests/workloads/memleak.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@

$(MG_WL)/memleak-musl: tests/workloads/memleak.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -O2 -g -Wall -Wextra -Werror $< -o $@
