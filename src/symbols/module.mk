# Fuzz targets of the symbols module: the ELF reader and the maps parser.
SYMBOLS_FUZZ_RT := $(filter src/rt/%,$(CORE_SRC))
SYMBOLS_FUZZ_FLAGS := -std=gnu11 -g -O1 -Isrc -Itests -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
FUZZERS += $(BUILD)/fuzz/fuzz_elf $(BUILD)/fuzz/fuzz_maps

$(BUILD)/fuzz/fuzz_elf: tests/fuzz/fuzz_elf.c src/symbols/elf.c src/symbols/elf.h $(SYMBOLS_FUZZ_RT)
	@mkdir -p $(dir $@)
	clang $(SYMBOLS_FUZZ_FLAGS) $< src/symbols/elf.c $(SYMBOLS_FUZZ_RT) -o $@

$(BUILD)/fuzz/fuzz_maps: tests/fuzz/fuzz_maps.c src/symbols/maps.c src/symbols/maps.h $(SYMBOLS_FUZZ_RT)
	@mkdir -p $(dir $@)
	clang $(SYMBOLS_FUZZ_FLAGS) $< src/symbols/maps.c $(SYMBOLS_FUZZ_RT) -o $@
