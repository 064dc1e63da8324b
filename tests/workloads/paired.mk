# Workloads built for glibc and musl from one source each: fd_table
# (tests/integration/fd_table.py), fork_short (fork_short.py), prefork_mem
# (prefork_mem.py, bench_prefork.sh), libc_leaf (libc_leaf.py).
PAIRED_WL := fd_table fork_short prefork_mem libc_leaf
PAIRED_GLIBC := $(patsubst %,$(BUILD)/workloads/%,$(PAIRED_WL))
PAIRED_MUSL := $(patsubst %,$(BUILD)/workloads/%-musl,$(PAIRED_WL))
TEST_PROGRAMS += $(PAIRED_GLIBC) $(PAIRED_MUSL)

$(PAIRED_GLIBC): $(BUILD)/workloads/%: tests/workloads/%.c
	@mkdir -p $(BUILD)/workloads
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@ -lpthread

$(PAIRED_MUSL): $(BUILD)/workloads/%-musl: tests/workloads/%.c
	@mkdir -p $(BUILD)/workloads
	$(MUSL_CC) -O2 -g -Wall -Wextra -Werror $< -o $@

# Descriptor system call costs (tests/bench/bench_fdtable.sh; glibc only).
TEST_PROGRAMS += $(BUILD)/workloads/fd_calls
$(BUILD)/workloads/fd_calls: tests/workloads/fd_calls.c
	@mkdir -p $(BUILD)/workloads
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@ -lpthread
