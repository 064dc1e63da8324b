# The library built with UBSan in trap mode (no runtime needed: undefined
# behaviour executes a trap instruction and kills the process), for
# tests/integration/ubsan_library.sh to rerun integration suites with.
UBSAN_OBJ := $(patsubst src/%.c,$(BUILD)/ubsan/%.o,$(LIB_SRC)) $(patsubst src/%.S,$(BUILD)/obj/%.o,$(LIB_ASM))
TEST_PROGRAMS += $(BUILD)/ubsan/libstowaway.so

$(BUILD)/ubsan/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -fsanitize=undefined -fsanitize-undefined-trap-on-error -MMD -MP -c $< -o $@

$(BUILD)/ubsan/libstowaway.so: $(UBSAN_OBJ) $(LIB_EXTRA_OBJ) src/core/exports.map
	$(CC) $(LIB_LDFLAGS) -o $@ $(UBSAN_OBJ) $(LIB_EXTRA_OBJ) -lgcc

-include $(UBSAN_OBJ:.o=.d)
