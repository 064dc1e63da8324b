# Fuzz targets of the symbols module: the ELF reader and the maps parser.
SYMBOLS_FUZZ_RT := $(filter src/rt/%,$(CORE_SRC))
FUZZERS += $(BUILD)/fuzz/fuzz_elf $(BUILD)/fuzz/fuzz_maps

$(BUILD)/fuzz/fuzz_elf: tests/fuzz/fuzz_elf.c src/symbols/elf.c src/symbols/elf.h $(SYMBOLS_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/symbols/elf.c $(SYMBOLS_FUZZ_RT) -o $@

$(BUILD)/fuzz/fuzz_maps: tests/fuzz/fuzz_maps.c src/symbols/maps.c src/symbols/maps.h $(SYMBOLS_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/symbols/maps.c $(SYMBOLS_FUZZ_RT) -o $@
