# Unwinder tests: sampled call-chain programs (glibc/musl, C/C++, with and
# without frame pointers), their shared library, and the fuzz targets for
# the .eh_frame parser.  Run by tests/integration/unwind_samples.sh.

UNWIND_WL_DIR := $(BUILD)/workloads
UNWIND_SHLIB := $(UNWIND_WL_DIR)/libunwind_shlib.so
UNWIND_WL_HDR := tests/workloads/unwind_chain.h $(wildcard src/unwind/*.h src/symbols/*.h)
UNWIND_WL_CFLAGS := -std=gnu11 -O2 -g -Isrc -Itests/workloads -Wall -Wextra -Werror
UNWIND_WL_LINK := -L$(UNWIND_WL_DIR) -lunwind_shlib -Wl,-rpath,'$$ORIGIN' -lpthread
# The frame-pointer choice of a variant comes from its name: *_fp or *_omit.
unwind_fp_flag = $(if $(filter %_fp,$(1)),-fno-omit-frame-pointer,-fomit-frame-pointer)
UNWIND_VARIANTS := gcc_omit gcc_fp musl_omit musl_fp cxx_omit cxx_fp

$(UNWIND_SHLIB): tests/workloads/unwind_shlib.c tests/workloads/unwind_chain.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -fPIC -shared -nostdlib -Itests/workloads -Wall -Wextra -Werror \
		-Wl,--build-id=sha1 $< -o $@

$(UNWIND_WL_DIR)/unwind_gcc_%: tests/workloads/unwind_driver.c tests/workloads/unwind_chain_c.c \
		$(UNWIND_WL_HDR) $(BUILD)/libcore.a $(UNWIND_SHLIB)
	$(CC) $(UNWIND_WL_CFLAGS) $(call unwind_fp_flag,$@) tests/workloads/unwind_driver.c \
		tests/workloads/unwind_chain_c.c $(BUILD)/libcore.a $(UNWIND_WL_LINK) -o $@

$(UNWIND_WL_DIR)/unwind_musl_%: tests/workloads/unwind_driver.c tests/workloads/unwind_chain_c.c \
		$(UNWIND_WL_HDR) $(BUILD)/libcore.a $(UNWIND_SHLIB)
	$(MUSL_CC) $(UNWIND_WL_CFLAGS) $(call unwind_fp_flag,$@) tests/workloads/unwind_driver.c \
		tests/workloads/unwind_chain_c.c $(BUILD)/libcore.a $(UNWIND_WL_LINK) -o $@

$(UNWIND_WL_DIR)/unwind_cxx_%: tests/workloads/unwind_driver.c tests/workloads/unwind_chain_cxx.cc \
		$(UNWIND_WL_HDR) $(BUILD)/libcore.a $(UNWIND_SHLIB)
	$(CC) $(UNWIND_WL_CFLAGS) $(call unwind_fp_flag,$@) -c tests/workloads/unwind_driver.c \
		-o $@.driver.o
	g++ -std=c++17 -O2 -g -Itests/workloads -Wall -Wextra -Werror $(call unwind_fp_flag,$@) \
		-c tests/workloads/unwind_chain_cxx.cc -o $@.chain.o
	g++ $@.driver.o $@.chain.o $(BUILD)/libcore.a $(UNWIND_WL_LINK) -o $@

TEST_PROGRAMS += $(UNWIND_SHLIB) $(addprefix $(UNWIND_WL_DIR)/unwind_,$(UNWIND_VARIANTS))

# Fuzz target: the .eh_frame parser and CFA-program interpreter.
FUZZERS += $(BUILD)/fuzz/fuzz_ehframe
$(BUILD)/fuzz/fuzz_ehframe: tests/fuzz/fuzz_ehframe.c src/unwind/cfi.c src/unwind/cfi.h \
		$(filter src/rt/%,$(CORE_SRC))
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/unwind/cfi.c $(filter src/rt/%,$(CORE_SRC)) -o $@
