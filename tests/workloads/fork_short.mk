# Short-lived forked children (tests/integration/fork_short.py).
TEST_PROGRAMS += $(BUILD)/workloads/fork_short $(BUILD)/workloads/fork_short-musl
$(BUILD)/workloads/fork_short: tests/workloads/fork_short.c
	@mkdir -p $(BUILD)/workloads
	$(CC) -O2 -g -Wall -Wextra -Werror $< -o $@

$(BUILD)/workloads/fork_short-musl: tests/workloads/fork_short.c
	@mkdir -p $(BUILD)/workloads
	$(MUSL_CC) -O2 -g -Wall -Wextra -Werror $< -o $@
