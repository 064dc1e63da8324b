# Allocation profiler: known-answer workloads and the benchmark driver.
# Included by the Makefile (src/*/*.mk).
ALLOC_WL_CFLAGS := -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer -fno-builtin
ALLOC_WL := $(BUILD)/workloads

$(ALLOC_WL)/alloc_known: tests/workloads/alloc_known.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLOC_WL_CFLAGS) $< -o $@

$(ALLOC_WL)/alloc_known-musl: tests/workloads/alloc_known.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(ALLOC_WL_CFLAGS) $< -o $@

$(ALLOC_WL)/alloc_known_cxx: tests/workloads/alloc_known_cxx.cpp
	@mkdir -p $(dir $@)
	g++ -std=c++17 $(ALLOC_WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(ALLOC_WL)/alloc_known $(ALLOC_WL)/alloc_known-musl $(ALLOC_WL)/alloc_known_cxx

$(ALLOC_WL)/alloc_bench: tests/workloads/alloc_bench.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLOC_WL_CFLAGS) $< -o $@ -lpthread
BENCHES += $(ALLOC_WL)/alloc_bench
# Also a test program: the overhead-cap test drives the allocation rate with it.
TEST_PROGRAMS += $(ALLOC_WL)/alloc_bench

# One allocation sample's cost with cold caches (bench_alloc.sh): no frame
# pointers, as distributions build; -fno-ipa-icf keeps the two paths apart.
$(ALLOC_WL)/alloc_cold: tests/workloads/alloc_cold.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -Wextra -Werror -fomit-frame-pointer -fno-ipa-icf $< -o $@
BENCHES += $(ALLOC_WL)/alloc_cold

$(ALLOC_WL)/alloc_churn: tests/workloads/alloc_churn.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLOC_WL_CFLAGS) $< -o $@ -lpthread

$(ALLOC_WL)/alloc_churn-musl: tests/workloads/alloc_churn.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(ALLOC_WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(ALLOC_WL)/alloc_churn $(ALLOC_WL)/alloc_churn-musl

# Instruction counts per pair (alloc_instructions.py): the workload and the
# floor any interposer of malloc/free/new/delete pays.
$(ALLOC_WL)/alloc_pairs: tests/workloads/alloc_pairs.cpp
	@mkdir -p $(dir $@)
	g++ -std=c++17 $(ALLOC_WL_CFLAGS) $< -o $@

$(ALLOC_WL)/alloc_forward.so: tests/workloads/alloc_forward.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLOC_WL_CFLAGS) -fPIC -shared $< -o $@ -ldl

TEST_PROGRAMS += $(ALLOC_WL)/alloc_pairs $(ALLOC_WL)/alloc_forward.so
