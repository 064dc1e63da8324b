# The descriptor-table workload (tests/integration/fd_table.py).
TEST_PROGRAMS += $(BUILD)/workloads/fd_table $(BUILD)/workloads/fd_table-musl
$(BUILD)/workloads/fd_table: tests/workloads/fd_table.c
	@mkdir -p $(BUILD)/workloads
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@

$(BUILD)/workloads/fd_table-musl: tests/workloads/fd_table.c
	@mkdir -p $(BUILD)/workloads
	$(MUSL_CC) -O2 -g -Wall -Wextra -Werror $< -o $@

# Descriptor system call costs (tests/bench/bench_fdtable.sh).
TEST_PROGRAMS += $(BUILD)/workloads/fd_calls
$(BUILD)/workloads/fd_calls: tests/workloads/fd_calls.c
	@mkdir -p $(BUILD)/workloads
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@ -lpthread
