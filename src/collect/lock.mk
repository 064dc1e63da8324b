# Lock and exception profilers: known-answer workloads, semantics
# checks and benchmark drivers.  Included by the Makefile (src/*/*.mk).
LOCK_WL := $(BUILD)/workloads
LOCK_WL_CFLAGS := -O2 -g -Wall -Wextra -Werror -fno-omit-frame-pointer

$(LOCK_WL)/lock_known: tests/workloads/lock_known.c
	@mkdir -p $(dir $@)
	$(CC) $(LOCK_WL_CFLAGS) $< -o $@ -lpthread

$(LOCK_WL)/lock_known-musl: tests/workloads/lock_known.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(LOCK_WL_CFLAGS) $< -o $@

$(LOCK_WL)/lock_semantics: tests/workloads/lock_semantics.c
	@mkdir -p $(dir $@)
	$(CC) $(LOCK_WL_CFLAGS) -D_GNU_SOURCE $< -o $@ -lpthread

$(LOCK_WL)/lock_semantics-musl: tests/workloads/lock_semantics.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(LOCK_WL_CFLAGS) -D_GNU_SOURCE $< -o $@

$(LOCK_WL)/exception_known: tests/workloads/exception_known.cpp
	@mkdir -p $(dir $@)
	g++ -std=c++17 $(LOCK_WL_CFLAGS) $< -o $@

TEST_PROGRAMS += $(LOCK_WL)/lock_known $(LOCK_WL)/lock_known-musl $(LOCK_WL)/lock_semantics \
	$(LOCK_WL)/lock_semantics-musl $(LOCK_WL)/exception_known

$(LOCK_WL)/lock_bench: tests/workloads/lock_bench.c
	@mkdir -p $(dir $@)
	$(CC) $(LOCK_WL_CFLAGS) $< -o $@ -lpthread

$(LOCK_WL)/exception_bench: tests/workloads/exception_bench.cpp
	@mkdir -p $(dir $@)
	g++ -std=c++17 $(LOCK_WL_CFLAGS) $< -o $@

# The floor of any interposer (bench_lock.sh): forwards lock/unlock, nothing else.
$(LOCK_WL)/lock_forward.so: tests/workloads/lock_forward.c
	@mkdir -p $(dir $@)
	$(CC) $(LOCK_WL_CFLAGS) -fPIC -shared $< -o $@ -ldl

BENCHES += $(LOCK_WL)/lock_bench $(LOCK_WL)/exception_bench $(LOCK_WL)/lock_forward.so
