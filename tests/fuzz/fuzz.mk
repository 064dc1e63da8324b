# Fuzz targets for settings and /proc text (the other parsers' targets live
# with their modules).  Built by `make test` too: tests/fuzz/run.sh runs them.
FUZZERS += $(BUILD)/fuzz/fuzz_config
CONFIG_FUZZ_SRC := src/config/config.c src/collect/wall_proc.c $(filter src/rt/%,$(CORE_SRC))
$(BUILD)/fuzz/fuzz_config: tests/fuzz/fuzz_config.c $(CONFIG_FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(CONFIG_FUZZ_SRC) -o $@
