# stowaway: build, test, lint, bench, demo.
#
# Conventions (see docs/development.md):
#  - Library sources: src/<concern>/*.c, compiled freestanding into build/libstowaway.so.
#  - Files that define exported or interposed symbols, or compiler support,
#    are "so-only" (src/core/lifecycle.c, *_hooks.c, src/rt/compiler_support.c); everything
#    else also goes into build/libcore.a, which unit tests link against.
#  - Unit tests: tests/unit/test_*.c, one binary each, built plain and with
#    ASan+UBSan.  Integration tests: executable tests/integration/*.{sh,py}.
#  - Test output protocol: one line per check, "PASS <name>" or "FAIL <name>".
#  - Modules may add rules and extend UNIT_EXTRA_*, TEST_PROGRAMS, BENCHES,
#    FUZZERS in a fragment src/<concern>/*.mk or tests/<area>/*.mk.

CC        ?= gcc
ifeq ($(origin CC),default)
CC        := gcc
endif
MUSL_CC   ?= musl-gcc
BUILD     := build
# Target architecture: the host's by default.  `make ARCH=aarch64` on an
# x86-64 machine cross-builds the library and the CLI into build/aarch64/
# with Debian's cross toolchain and musl (docs/arm64.md).
HOST_ARCH := $(shell uname -m)
ARCH      ?= $(HOST_ARCH)
CROSS     :=
ifneq ($(ARCH),$(HOST_ARCH))
CROSS     := $(ARCH)-linux-gnu-
CC        := $(CROSS)gcc
MUSL_CC   := $(ARCH)-linux-musl-gcc
BUILD     := build/$(ARCH)
endif
# aarch64: atomics inline (ARMv8.0 exclusives), not libgcc's outline helpers,
# whose constructor would call the host's getauxval.
ARCH_CFLAGS := $(if $(filter aarch64,$(ARCH)),-mno-outline-atomics)
VERSION   := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

LIB_DIRS  := rt deflate config core profile encode unwind dwarf symbols collect export demangle
LIB_SRC   := $(sort $(foreach d,$(LIB_DIRS),$(wildcard src/$(d)/*.c)))
SO_ONLY   := src/core/lifecycle.c $(wildcard src/*/*_hooks.c) src/rt/compiler_support.c
# Library code compiled against vendored headers (mbedTLS) stays out of
# libcore.a, so unit tests build without the mbedTLS source; the programs
# that reach TLS link its object (src/export/module.mk).
VENDORED_SRC := src/export/tls.c
CORE_SRC  := $(filter-out $(SO_ONLY) $(VENDORED_SRC),$(LIB_SRC))
LIB_ASM   := $(wildcard src/*/*.S)

WARN      := -Wall -Wextra -Werror -Wvla -Wshadow -Wpointer-arith -Wstrict-prototypes \
             -Wmissing-prototypes -Wundef -Wcast-align -Wformat=2 -Wno-format-nonliteral
LIB_CFLAGS := -std=c11 -O2 -g -fPIC -fvisibility=hidden -ffreestanding -fno-builtin \
             -fno-stack-protector -fno-omit-frame-pointer -fno-strict-aliasing \
             -fno-semantic-interposition -fno-common -fno-tree-loop-distribute-patterns -ftls-model=initial-exec \
             -DSTOWAWAY_VERSION='"$(VERSION)"' -Isrc $(WARN) $(ARCH_CFLAGS)
LIB_LDFLAGS := -shared -nostdlib -Wl,--version-script=src/core/exports.map \
             -Wl,-z,now -Wl,-z,defs -Wl,-z,noexecstack -Wl,-z,relro -Wl,--build-id=sha1 \
             -Wl,--hash-style=both -Wl,-soname,libstowaway.so
# Host (test) code: hosted C with libc, same warnings.
HOST_CFLAGS := -std=gnu11 -O1 -g -Isrc -Itests -DSTOWAWAY_VERSION='"$(VERSION)"' $(WARN) \
             -Wno-missing-prototypes -Wno-strict-prototypes
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

LIB_OBJ   := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC)) $(patsubst src/%.S,$(BUILD)/obj/%.o,$(LIB_ASM))
# Test builds (libcore.a, libcore-san.a) use an allocator that can be told
# to fail (RT_FAULT_INJECTION, see rt.h); the .so and the CLI never do.
CORE_OBJ  := $(patsubst $(BUILD)/obj/rt/heap.o,$(BUILD)/obj/rt/heap_fault.o,$(patsubst src/%.c,$(BUILD)/obj/%.o,$(CORE_SRC)))
SAN_OBJ   := $(patsubst src/%.c,$(BUILD)/san/%.o,$(CORE_SRC))

UNIT_SRC  := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_SAN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/san/%,$(UNIT_SRC))

# Fuzz targets (built by the fragments): one compiler and one set of flags.
FUZZ_CC     := clang
FUZZ_CFLAGS := -std=gnu11 -g -O1 -Isrc -Itests -DSTOWAWAY_VERSION='"fuzz"' \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined

# Extended by fragments.
# Objects added to the .so only (e.g. vendored mbedTLS built by vendor/*.mk).
LIB_EXTRA_OBJ   :=
UNIT_EXTRA_SRC  :=
UNIT_EXTRA_LIBS :=
# Unit tests that need a code generator (protoc-c) or vendored source
# (mbedTLS): run by `make test`, not by `make check`.
UNIT_OUTSIDE_CHECK :=
TEST_PROGRAMS   :=
BENCHES         :=
FUZZERS         :=

.PHONY: all lib cli check test test-only unit integration lint bench demo fuzz soak deps clean
all: lib cli

-include $(sort $(wildcard src/*/*.mk vendor/*.mk tests/*/*.mk))

# Fuzzers compile library sources directly, without dependency files: any
# header under src/ rebuilds them (coarse, but never stale).  The library's
# objects track their headers with -MMD.
SRC_HEADERS := $(wildcard src/*.h src/*/*.h src/*/*/*.h)
$(FUZZERS): $(SRC_HEADERS)

lib: $(BUILD)/libstowaway.so
cli: $(BUILD)/stowaway

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/%.o: src/%.S
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/obj/rt/heap_fault.o: src/rt/heap.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -DRT_FAULT_INJECTION -MMD -MP -c $< -o $@
$(BUILD)/san/rt/heap.o: LIB_CFLAGS += -DRT_FAULT_INJECTION

$(BUILD)/san/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -O2 -ffreestanding -fno-builtin,$(LIB_CFLAGS)) -O1 $(SAN_FLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libstowaway.so: $(LIB_OBJ) $(LIB_EXTRA_OBJ) src/core/exports.map
	$(CC) $(LIB_LDFLAGS) -o $@ $(LIB_OBJ) $(LIB_EXTRA_OBJ) -lgcc

$(BUILD)/libcore.a: $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libcore-san.a: $(SAN_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The CLI is an ordinary static program linked against musl.  It links the
# library's own freestanding objects for what both need (the runtime,
# DEFLATE/gzip/CRC-32, the protobuf writer, the demangler, the ELF and DWARF
# readers and debug-file search): one copy of each in the tree.
CLI_SRC := $(sort $(wildcard src/cli/*.c))
CLI_LIB_OBJ := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(filter src/rt/% src/deflate/% src/encode/pb.c \
	src/demangle/% src/dwarf/% src/symbols/elf.c src/symbols/functions.c src/symbols/debuginfo.c,$(CORE_SRC)))
$(BUILD)/libcli-shared.a: $(CLI_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(BUILD)/stowaway: $(CLI_SRC) $(wildcard src/cli/*.h) src/stowaway.h $(BUILD)/libcli-shared.a
	@mkdir -p $(BUILD)
	$(MUSL_CC) -std=gnu11 -O2 -static -Isrc -DSTOWAWAY_VERSION='"$(VERSION)"' $(WARN) \
		-Wno-missing-prototypes $(CLI_SRC) $(BUILD)/libcli-shared.a -o $@

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libcore.a $(UNIT_EXTRA_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $< $(UNIT_EXTRA_SRC) $(BUILD)/libcore.a $(UNIT_EXTRA_LIBS) -lpthread -lm -o $@

$(BUILD)/tests/san/%: tests/unit/%.c $(BUILD)/libcore-san.a $(UNIT_EXTRA_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $< $(UNIT_EXTRA_SRC) $(BUILD)/libcore-san.a $(UNIT_EXTRA_LIBS) -lpthread -lm -o $@

# Everything a test run needs, built before any test starts.
test-build: all $(UNIT_BIN) $(UNIT_SAN) $(TEST_PROGRAMS) $(FUZZERS)
.PHONY: test-build

# `make test`: set up a fresh Debian 12 machine, build, lint, run every test.
# Lint runs inside the test runner, so its result is counted with the tests.
test: deps
	@$(MAKE) --no-print-directory test-build
	@STOWAWAY_LINT=1 tests/run.sh

# Run the tests without installing packages or linting (for quick iteration).
# With T=name, only what the matching tests need is built (names as
# tests/run.sh prints them: unit/test_x, asan/test_x, integration/x.py,
# field/x.py, fuzz/short): a unit test needs its binary, the fuzz run the
# fuzzers, and an integration or field script the build/ files its
# "# needs:" line names (in its first ten lines; tests/needs_audit.py checks
# such a line against a traced run); a script without that line gets
# everything (test-build).
T ?=
test_match = $(strip $(if $(T),$(foreach n,$(1),$(if $(findstring $(T),$(n)),$(n))),$(1)))
ifneq ($(filter test-only,$(MAKECMDGOALS)),)
# The scripts tests/run.sh runs: the executable ones (the others are modules).
TEST_OTHER_NAMES := fuzz/short $(patsubst tests/%,%,$(sort $(shell find tests/integration tests/field \
	-maxdepth 1 -type f -perm -u+x \( -name '*.sh' -o -name '*.py' \) 2>/dev/null)))
script_needs = $(or $(shell sed -n '1,10s/^\# needs://p' tests/$(1)),test-build)
TEST_ONLY_NEEDS := $(sort \
	$(foreach n,$(call test_match,$(TEST_OTHER_NAMES)),$(if $(filter fuzz/short,$(n)),$(FUZZERS),$(call script_needs,$(n)))) \
	$(patsubst unit/%,$(BUILD)/tests/%,$(call test_match,$(patsubst tests/unit/%.c,unit/%,$(UNIT_SRC)))) \
	$(patsubst asan/%,$(BUILD)/tests/san/%,$(call test_match,$(patsubst tests/unit/%.c,asan/%,$(UNIT_SRC)))))
endif
test-only: $(TEST_ONLY_NEEDS)
	@tests/run.sh $(T)

# `make check`: the unit tests, plain and under ASan+UBSan, in about a minute.
# Needs no network and no tool beyond the compiler and zlib: no mbedTLS, Go
# or protoc-c (the tests that need those run in `make test`).
CHECK_NAMES := $(filter-out $(UNIT_OUTSIDE_CHECK),$(patsubst tests/unit/%.c,%,$(UNIT_SRC)))
check: $(patsubst %,$(BUILD)/tests/%,$(CHECK_NAMES)) $(patsubst %,$(BUILD)/tests/san/%,$(CHECK_NAMES))
	@tests/run.sh $(patsubst %,unit/%,$(CHECK_NAMES)) $(patsubst %,asan/%,$(CHECK_NAMES))

lint: $(BUILD)/libstowaway.so
	@tests/lint.sh

deps:
	@tests/deps.sh

bench: all $(TEST_PROGRAMS) $(BENCHES)
	@tests/bench/run.sh

# `make demo` works as the first command on a fresh Debian 12 machine: it
# installs what the demo needs (tests/deps/demo.txt), builds the library, the
# CLI and the demo workload only, and profiles it.
demo:
	@tests/deps.sh demo
	@$(MAKE) --no-print-directory $(BUILD)/libstowaway.so $(BUILD)/stowaway $(BUILD)/workloads/demo
	@tests/demo.sh

fuzz: $(FUZZERS)
	@tests/fuzz/run.sh long

soak: all $(TEST_PROGRAMS)
	@tests/soak.sh

clean:
	rm -rf $(BUILD) profiles

# The sources make builds, one "LIB file..." and one "CLI file..." line
# (tests/lint.sh lints exactly these).
print-sources:
	@echo LIB $(LIB_SRC)
	@echo CLI $(CLI_SRC)
.PHONY: print-sources

-include $(LIB_OBJ:.o=.d) $(SAN_OBJ:.o=.d) $(BUILD)/obj/rt/heap_fault.d
