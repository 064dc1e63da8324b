# The prefork memory workload (tests/integration/prefork_mem.py, bench).
TEST_PROGRAMS += $(BUILD)/workloads/prefork_mem $(BUILD)/workloads/prefork_mem-musl
$(BUILD)/workloads/prefork_mem: tests/workloads/prefork_mem.c
	@mkdir -p $(BUILD)/workloads
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@ -lpthread

$(BUILD)/workloads/prefork_mem-musl: tests/workloads/prefork_mem.c
	@mkdir -p $(BUILD)/workloads
	$(MUSL_CC) -O2 -g -Wall -Wextra -Werror $< -o $@
