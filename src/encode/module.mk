# ---- gzip / deflate (src/encode/deflate.c) ----
# Unit tests judge our gzip output with zlib.
UNIT_EXTRA_LIBS += -lz
# Bench driver: times our compressor on the same input gzip(1) gets.
TEST_PROGRAMS += $(BUILD)/tests/bench_gzip_driver
$(BUILD)/tests/bench_gzip_driver: tests/bench/bench_gzip_driver.c $(BUILD)/libcore.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -O2 $< $(BUILD)/libcore.a -lpthread -lm -o $@
# Fuzzer: compress at every level, inflate with zlib.
FUZZERS += $(BUILD)/fuzz/fuzz_gzip
GZIP_FUZZ_SRC := src/encode/deflate.c $(filter src/rt/%,$(CORE_SRC))
$(BUILD)/fuzz/fuzz_gzip: tests/fuzz/fuzz_gzip.c $(GZIP_FUZZ_SRC)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -Isrc -Itests -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined $< $(GZIP_FUZZ_SRC) -lz -o $@
