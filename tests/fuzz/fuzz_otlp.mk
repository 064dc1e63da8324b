# Fuzz target of the OpenTelemetry settings and the pprof -> OTLP translation.
FUZZERS += $(BUILD)/fuzz/fuzz_otlp
OTLP_FUZZ_SRC := src/config/otlp.c src/encode/otlp.c src/encode/pb.c src/profile/htab.c \
	$(filter src/rt/%,$(CORE_SRC))
$(BUILD)/fuzz/fuzz_otlp: tests/fuzz/fuzz_otlp.c $(OTLP_FUZZ_SRC)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -Isrc -Itests -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined $< $(OTLP_FUZZ_SRC) -o $@
