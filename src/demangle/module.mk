# The demangler's corpus filter (demangle_corpus.py) and fuzz target.  Both
# compile the sources directly: the demangler needs nothing else.
DEMANGLE_SRC := $(sort $(wildcard src/demangle/*.c))
TEST_PROGRAMS += $(BUILD)/tests/demangle_filter
$(BUILD)/tests/demangle_filter: tests/integration/demangle_filter.c $(DEMANGLE_SRC) src/demangle/demangle.h
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -O2 $< $(DEMANGLE_SRC) -o $@

FUZZERS += $(BUILD)/fuzz/fuzz_demangle
$(BUILD)/fuzz/fuzz_demangle: tests/fuzz/fuzz_demangle.c $(DEMANGLE_SRC) src/demangle/demangle.h
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -Isrc -Itests -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined $< $(DEMANGLE_SRC) -o $@
