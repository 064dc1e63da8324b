# DWARF reader: a query tool for the accuracy tests and benchmarks, and the fuzzer.
TEST_PROGRAMS += $(BUILD)/tests/dwarf_query
$(BUILD)/tests/dwarf_query: tests/workloads/dwarf_query.c $(BUILD)/libcore.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -O2 $< $(BUILD)/libcore.a -lpthread -lm -o $@
