# DWARF reader: a query tool for the accuracy tests and benchmarks, and the fuzzer.
TEST_PROGRAMS += $(BUILD)/tests/dwarf_query
$(BUILD)/tests/dwarf_query: tests/workloads/dwarf_query.c $(BUILD)/libcore.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -O2 $< $(BUILD)/libcore.a -lpthread -lm -o $@

DWARF_FUZZ_RT := $(filter src/rt/%,$(CORE_SRC))
FUZZERS += $(BUILD)/fuzz/fuzz_dwarf
$(BUILD)/fuzz/fuzz_dwarf: tests/fuzz/fuzz_dwarf.c $(wildcard src/dwarf/*.c src/dwarf/*.h) $(DWARF_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(wildcard src/dwarf/*.c) $(DWARF_FUZZ_RT) -o $@
