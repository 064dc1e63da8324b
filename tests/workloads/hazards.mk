# Hazard workloads: each built for glibc and musl.  Used by
# tests/integration/hazards_*.py and tests/soak.sh.
# (Own names: workloads.mk, which defines WL, is included after this file.)
HZ_WL := $(BUILD)/workloads
HZ_CFLAGS := -O2 -g -Wall -Wextra -Werror
HAZARDS := threads dlopen signals setuid setxid spawn exec soak
HAZARD_BINS := $(foreach h,$(HAZARDS),$(HZ_WL)/hazard_$(h) $(HZ_WL)/hazard_$(h)-musl)
TEST_PROGRAMS += $(HAZARD_BINS) $(HZ_WL)/hazard_dlib.so

$(HZ_WL)/hazard_%: tests/workloads/hazard_%.c tests/workloads/hazard_common.h
	@mkdir -p $(HZ_WL)
	$(CC) $(HZ_CFLAGS) $< -o $@ -lpthread -ldl

$(HZ_WL)/hazard_%-musl: tests/workloads/hazard_%.c tests/workloads/hazard_common.h
	@mkdir -p $(HZ_WL)
	$(MUSL_CC) $(HZ_CFLAGS) $< -o $@

# The library hazard_dlopen loads and unloads (glibc; musl never unloads).
$(HZ_WL)/hazard_dlib.so: tests/workloads/hazard_dlib.c
	@mkdir -p $(HZ_WL)
	$(CC) $(HZ_CFLAGS) -fPIC -shared $< -o $@
