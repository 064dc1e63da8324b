# Memory guard workloads: glibc and musl.
MG_WL := $(BUILD)/workloads
TEST_PROGRAMS += $(MG_WL)/memleak $(MG_WL)/memleak-musl

$(MG_WL)/memleak: tests/workloads/memleak.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@

$(MG_WL)/memleak-musl: tests/workloads/memleak.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -O2 -g -Wall -Wextra -Werror $< -o $@

# Fuzz target of the guard's /proc and cgroup parsers and its settings.
FUZZERS += $(BUILD)/fuzz/fuzz_memguard
MEMGUARD_FUZZ_SRC := src/collect/memguard.c src/config/config.c $(filter src/rt/%,$(CORE_SRC))
$(BUILD)/fuzz/fuzz_memguard: tests/fuzz/fuzz_memguard.c $(MEMGUARD_FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(MEMGUARD_FUZZ_SRC) -o $@
