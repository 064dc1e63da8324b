# CLI: test programs and fuzzers (the CLI binary itself is built by the
# $(BUILD)/stowaway rule in the Makefile).

# Analysis code without main(), for the fuzzers.
CLI_LIB_SRC := $(filter-out src/cli/main.c,$(sort $(wildcard src/cli/*.c)))

# Go's runtime/pprof as an independent producer of profiles.  Caches live
# under build/ so a fresh machine (or root) needs no home directory.
TEST_PROGRAMS += $(BUILD)/tests/gen_pprof
$(BUILD)/tests/gen_pprof: tests/workloads/gen_pprof.go
	@mkdir -p $(dir $@) $(BUILD)/go-cache $(BUILD)/gopath
	cd tests/workloads && GOCACHE=$(abspath $(BUILD)/go-cache) GOPATH=$(abspath $(BUILD)/gopath) \
		GO111MODULE=off GOFLAGS= go build -o $(abspath $@) gen_pprof.go

FUZZERS += $(BUILD)/fuzz/fuzz_pprof_decode
CLI_FUZZ_LIB_SRC := $(filter src/rt/% src/deflate/% src/encode/pb.c src/demangle/% src/dwarf/% \
	src/symbols/elf.c src/symbols/functions.c src/symbols/debuginfo.c,$(CORE_SRC))
$(BUILD)/fuzz/fuzz_pprof_decode: tests/fuzz/fuzz_pprof_decode.c $(CLI_LIB_SRC) $(CLI_FUZZ_LIB_SRC) $(wildcard src/cli/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(CLI_LIB_SRC) $(CLI_FUZZ_LIB_SRC) -o $@

# A stand-in library for the run/install tests (tests/integration/cli_run.sh).
TEST_PROGRAMS += $(BUILD)/tests/cli_fake_lib.so
$(BUILD)/tests/cli_fake_lib.so: src/cli/testdata/fake_lib.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -fPIC -shared -Wall -Wextra -Werror $< -o $@
