# OpenTelemetry thread-context writers (OTEP 4947): the variable exported by
# the executable (-rdynamic) or by a library, glibc and musl, TLSDESC.
OTEL_WL_FLAGS := $(WL_CFLAGS) -fPIC -mtls-dialect=gnu2 -Itests/workloads
TEST_PROGRAMS += $(WL)/otel_writer $(WL)/otel_writer-musl $(WL)/otel_writer-lib \
                 $(WL)/otel_writer-lib-musl $(WL)/libotel_ctx.so $(WL)/musl/libotel_ctx.so

$(WL)/otel_writer: tests/workloads/otel_writer.c tests/workloads/otel_writer.h
	@mkdir -p $(WL)
	$(CC) $(OTEL_WL_FLAGS) -pie -rdynamic $< -o $@ -lpthread
$(WL)/otel_writer-musl: tests/workloads/otel_writer.c tests/workloads/otel_writer.h
	@mkdir -p $(WL)
	$(MUSL_CC) $(OTEL_WL_FLAGS) -pie -rdynamic $< -o $@
$(WL)/libotel_ctx.so: tests/workloads/otel_ctx_lib.c tests/workloads/otel_writer.h
	@mkdir -p $(WL)
	$(CC) $(OTEL_WL_FLAGS) -shared $< -o $@
$(WL)/musl/libotel_ctx.so: tests/workloads/otel_ctx_lib.c tests/workloads/otel_writer.h
	@mkdir -p $(WL)/musl
	$(MUSL_CC) $(OTEL_WL_FLAGS) -shared $< -o $@
$(WL)/otel_writer-lib: tests/workloads/otel_writer.c $(WL)/libotel_ctx.so
	$(CC) $(OTEL_WL_FLAGS) -DOTEL_CTX_IN_LIB -pie $< -o $@ -L$(WL) -lotel_ctx \
		-Wl,-rpath,'$$ORIGIN' -lpthread
$(WL)/otel_writer-lib-musl: tests/workloads/otel_writer.c $(WL)/musl/libotel_ctx.so
	$(MUSL_CC) $(OTEL_WL_FLAGS) -DOTEL_CTX_IN_LIB -pie $< -o $@ -L$(WL)/musl -lotel_ctx \
		-Wl,-rpath,'$$ORIGIN/musl'

# The thread-context unit test exports its own otel_thread_ctx_v1.
$(BUILD)/tests/test_otel_context $(BUILD)/tests/san/test_otel_context: UNIT_EXTRA_LIBS += -rdynamic

# The variable in a library loaded with dlopen after the profiler started.
TEST_PROGRAMS += $(WL)/otel_dlopen $(WL)/otel_dlopen-musl
$(WL)/otel_dlopen: tests/workloads/otel_dlopen.c tests/workloads/otel_writer.h $(WL)/libotel_ctx.so
	$(CC) $(OTEL_WL_FLAGS) -pie $< -o $@ -ldl -lpthread
$(WL)/otel_dlopen-musl: tests/workloads/otel_dlopen.c tests/workloads/otel_writer.h $(WL)/musl/libotel_ctx.so
	$(MUSL_CC) $(OTEL_WL_FLAGS) -pie $< -o $@
