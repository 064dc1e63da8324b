# Host programs built with ASan+UBSan, for tests/integration/asan_hosts.py:
# the library (which ASan cannot instrument, see ubsan.mk) preloaded into
# sanitized processes, so any memory error our hooks cause in the host
# (a wrong size forwarded, a block freed twice or by the wrong allocator, a
# pthread object touched) is reported by ASan in the host's own accesses.
ASAN_HOST_DIR := $(BUILD)/asan-hosts
ASAN_HOST_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -Itests/workloads
ASAN_HOSTS := $(addprefix $(ASAN_HOST_DIR)/,alloc_known alloc_churn wall_torture lock_semantics \
	hazard_threads exception_known)
TEST_PROGRAMS += $(ASAN_HOSTS)
# Built with the lock workloads' _GNU_SOURCE (pthread_mutex_clocklock).
$(ASAN_HOST_DIR)/lock_semantics: ASAN_HOST_FLAGS += -D_GNU_SOURCE

$(ASAN_HOST_DIR)/%: tests/workloads/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_HOST_FLAGS) $< -o $@ -lpthread -ldl

$(ASAN_HOST_DIR)/%: tests/workloads/%.cpp
	@mkdir -p $(dir $@)
	g++ -std=c++17 $(ASAN_HOST_FLAGS) $< -o $@ -lpthread
