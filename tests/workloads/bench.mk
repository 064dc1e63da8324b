# Benchmark workloads (tests/bench/bench_cpu.sh, tests/bench/bench_startup.sh).
# The CPU workload is built without frame pointers (the CFI path, as in
# distribution binaries) and with them; -fno-ipa-icf keeps the per-thread
# leaves apart.
BENCH_WL := $(BUILD)/workloads
BENCH_WL_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -fno-ipa-icf

TEST_PROGRAMS += $(BENCH_WL)/bench_cpu_work-nofp $(BENCH_WL)/bench_cpu_work-fp
$(BENCH_WL)/bench_cpu_work-nofp: tests/workloads/bench_cpu_work.c
	@mkdir -p $(BENCH_WL)
	$(CC) $(BENCH_WL_CFLAGS) -fomit-frame-pointer $< -o $@ -lpthread
$(BENCH_WL)/bench_cpu_work-fp: tests/workloads/bench_cpu_work.c
	@mkdir -p $(BENCH_WL)
	$(CC) $(BENCH_WL_CFLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread
