# ---- DEFLATE, gzip, zlib, CRC-32 (src/deflate/) ----
# Unit tests judge our gzip output with zlib.
UNIT_EXTRA_LIBS += -lz
# Bench driver: times our compressor on the same input gzip(1) gets, and our
# decompressors against zlib's on the same streams.
TEST_PROGRAMS += $(BUILD)/tests/bench_gzip_driver
$(BUILD)/tests/bench_gzip_driver: tests/bench/bench_gzip_driver.c $(BUILD)/libcore.a
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) -O2 $< $(BUILD)/libcore.a -lz -lpthread -lm -o $@
# Fuzzers: the compressor at every level judged by zlib (fuzz_gzip), and the
# decompressors on arbitrary bytes plus a round trip (fuzz_inflate).
DEFLATE_FUZZ_SRC := $(filter src/deflate/% src/rt/%,$(CORE_SRC))
FUZZERS += $(BUILD)/fuzz/fuzz_gzip $(BUILD)/fuzz/fuzz_inflate
$(BUILD)/fuzz/fuzz_gzip $(BUILD)/fuzz/fuzz_inflate: $(BUILD)/fuzz/%: tests/fuzz/%.c $(DEFLATE_FUZZ_SRC) $(wildcard src/deflate/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(DEFLATE_FUZZ_SRC) -lz -o $@
