# The CPU known-answer workload linked by other linkers: lld (clang
# -fuse-ld=lld: p_vaddr != p_offset, the text segment starts on the
# read-only segment's page), PIE and not, and gold; and a Rust program
# built by rustc with its default linker, judged against perf.
LINKERS_WL := $(BUILD)/workloads
CPU_SPLIT_LINKERS := $(LINKERS_WL)/cpu_split-lld-nofp $(LINKERS_WL)/cpu_split-lld-nopie-fp $(LINKERS_WL)/cpu_split-gold-nofp
TEST_PROGRAMS += $(CPU_SPLIT_LINKERS)
$(LINKERS_WL)/cpu_split-lld-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(LINKERS_WL)
	clang -fuse-ld=lld $(WL_CFLAGS) -fomit-frame-pointer $< -o $@ -lpthread
$(LINKERS_WL)/cpu_split-lld-nopie-fp: tests/workloads/cpu_split.c
	@mkdir -p $(LINKERS_WL)
	clang -fuse-ld=lld -no-pie -fno-pie $(WL_CFLAGS) -fno-omit-frame-pointer $< -o $@ -lpthread
$(LINKERS_WL)/cpu_split-gold-nofp: tests/workloads/cpu_split.c
	@mkdir -p $(LINKERS_WL)
	$(CC) -fuse-ld=gold $(WL_CFLAGS) -fomit-frame-pointer $< -o $@ -lpthread

# rustc from PATH, else rustup's default place; without one, rust_names.py
# reports the missing workload as a failure.
RUSTC ?= $(firstword $(shell command -v rustc 2>/dev/null) $(wildcard $(HOME)/.cargo/bin/rustc))
ifneq ($(RUSTC),)
RUST_SPLITS := $(foreach v,-v0 -release -v0-release,$(LINKERS_WL)/rust_split$(v))
TEST_PROGRAMS += $(LINKERS_WL)/rust_split $(RUST_SPLITS) $(LINKERS_WL)/rust_mimalloc
endif
# Built one after another: each writes intermediate files of the same crate
# name into the same directory.  -release is what cargo's release profile
# builds by default (no DWARF, the standard library's stripped too), so
# names come from the symbol table; -v0 has the program's own symbols in
# Rust's v0 mangling (_R...), as the standard library's already are.
$(LINKERS_WL)/rust_split: tests/workloads/rust_split.rs
	@mkdir -p $(LINKERS_WL)
	$(RUSTC) -O -g --edition 2021 $< -o $@
$(LINKERS_WL)/rust_split-v0: tests/workloads/rust_split.rs | $(LINKERS_WL)/rust_split
	$(RUSTC) -O -g --edition 2021 -C symbol-mangling-version=v0 $< -o $@
$(LINKERS_WL)/rust_split-release: tests/workloads/rust_split.rs | $(LINKERS_WL)/rust_split-v0
	$(RUSTC) -C opt-level=3 -C strip=debuginfo --edition 2021 $< -o $@
$(LINKERS_WL)/rust_split-v0-release: tests/workloads/rust_split.rs | $(LINKERS_WL)/rust_split-release
	$(RUSTC) -C opt-level=3 -C strip=debuginfo --edition 2021 -C symbol-mangling-version=v0 $< -o $@

# alloc_foreign.py: a Rust program whose global allocator is mimalloc.
$(LINKERS_WL)/rust_mimalloc: tests/workloads/rust_mimalloc.rs
	@mkdir -p $(LINKERS_WL)
	$(RUSTC) -O --edition 2021 $< -o $@

# names.py: demangled names, glibc's aliases, our frames out of stacks.
TEST_PROGRAMS += $(LINKERS_WL)/names_cxx
$(LINKERS_WL)/names_cxx: tests/workloads/names_cxx.cpp
	@mkdir -p $(LINKERS_WL)
	g++ -O2 -g -Wall -Wextra -Werror $< -o $@ -lpthread

# maps_late.py: code mapped without dlopen (a hand-made loader).
TEST_PROGRAMS += $(LINKERS_WL)/maps_late $(LINKERS_WL)/libmaps_late.so
$(LINKERS_WL)/maps_late: tests/workloads/maps_late.c
	@mkdir -p $(LINKERS_WL)
	$(CC) $(WL_CFLAGS) $< -o $@
$(LINKERS_WL)/libmaps_late.so: tests/workloads/maps_late_lib.c
	@mkdir -p $(LINKERS_WL)
	$(CC) $(WL_CFLAGS) -fPIC -shared -nostdlib $< -o $@
