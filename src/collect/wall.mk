# Wall profiler: the torture workload (glibc and musl).
WALL_WL := $(BUILD)/workloads
WALL_WL_CFLAGS := -O2 -g -Wall -Wextra -Werror

$(WALL_WL)/wall_torture: tests/workloads/wall_torture.c
	@mkdir -p $(dir $@)
	$(CC) $(WALL_WL_CFLAGS) $< -o $@ -lpthread

$(WALL_WL)/wall_torture-musl: tests/workloads/wall_torture.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(WALL_WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(WALL_WL)/wall_torture $(WALL_WL)/wall_torture-musl

# Bench driver: N waiting threads, prints the CPU time of the thread serving the wall ticks.
$(WALL_WL)/wall_threads: tests/workloads/wall_threads.c
	@mkdir -p $(dir $@)
	$(CC) $(WALL_WL_CFLAGS) $< -o $@ -lpthread

TEST_PROGRAMS += $(WALL_WL)/wall_threads

# Stack reuse for raw (not interposed) waits: glibc and musl.
$(WALL_WL)/wall_reuse: tests/workloads/wall_reuse.c
	@mkdir -p $(dir $@)
	$(CC) $(WALL_WL_CFLAGS) $< -o $@ -lpthread

$(WALL_WL)/wall_reuse-musl: tests/workloads/wall_reuse.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(WALL_WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(WALL_WL)/wall_reuse $(WALL_WL)/wall_reuse-musl

# Known answers for threads that mix CPU-heavy system calls, user work and
# waits (glibc and musl).
$(WALL_WL)/wall_mixed: tests/workloads/wall_mixed.c
	@mkdir -p $(dir $@)
	$(CC) $(WALL_WL_CFLAGS) -fno-optimize-sibling-calls $< -o $@ -lpthread

$(WALL_WL)/wall_mixed-musl: tests/workloads/wall_mixed.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(WALL_WL_CFLAGS) -fno-optimize-sibling-calls $< -o $@

TEST_PROGRAMS += $(WALL_WL)/wall_mixed $(WALL_WL)/wall_mixed-musl

# Instructions per interposed call (wall_instructions.py): calls that never block.
$(WALL_WL)/wall_calls: tests/workloads/wall_calls.c
	@mkdir -p $(dir $@)
	$(CC) $(WALL_WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(WALL_WL)/wall_calls
