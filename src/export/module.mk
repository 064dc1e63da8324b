# Network exporters: test programs, unit-test link rules and fuzzers.
# The mbedTLS recipe is vendor/mbedtls.mk.

# vendor/mbedtls.mk is included after this file, so name its product here
# (prerequisites are expanded when a rule is read).
EXPORT_MBEDTLS_OBJ := $(BUILD)/vendor/mbedtls.o

# Drives an exporter from the environment, for tests/integration/export_*.
EXPORT_DRIVER := $(BUILD)/tests/export_driver
TEST_PROGRAMS += $(EXPORT_DRIVER)

# tls.o is not in libcore.a (it needs the mbedTLS headers): linked by name.
$(EXPORT_DRIVER): tests/integration/export_driver.c $(BUILD)/libcore.a $(BUILD)/obj/export/tls.o $(EXPORT_MBEDTLS_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $< $(BUILD)/obj/export/tls.o $(EXPORT_MBEDTLS_OBJ) $(BUILD)/libcore.a -lpthread -lm -o $@

# Unit tests that reach the exporters (and so TLS) also link tls.o and
# mbedTLS; they need its source, so they run in `make test`, not `make check`.
EXPORT_TLS_TESTS := test_datadog test_pyroscope
UNIT_OUTSIDE_CHECK += $(EXPORT_TLS_TESTS)
$(patsubst %,$(BUILD)/tests/%,$(EXPORT_TLS_TESTS)): $(BUILD)/tests/%: tests/unit/%.c \
		$(BUILD)/libcore.a $(BUILD)/obj/export/tls.o $(EXPORT_MBEDTLS_OBJ) $(UNIT_EXTRA_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $< $(UNIT_EXTRA_SRC) $(BUILD)/obj/export/tls.o $(EXPORT_MBEDTLS_OBJ) $(BUILD)/libcore.a \
		$(UNIT_EXTRA_LIBS) -lpthread -lm -o $@
$(patsubst %,$(BUILD)/tests/san/%,$(EXPORT_TLS_TESTS)): $(BUILD)/tests/san/%: tests/unit/%.c \
		$(BUILD)/libcore-san.a $(BUILD)/san/export/tls.o $(EXPORT_MBEDTLS_OBJ) $(UNIT_EXTRA_SRC)
	@mkdir -p $(dir $@)
	$(CC) $(HOST_CFLAGS) $(SAN_FLAGS) $< $(UNIT_EXTRA_SRC) $(BUILD)/san/export/tls.o $(EXPORT_MBEDTLS_OBJ) \
		$(BUILD)/libcore-san.a $(UNIT_EXTRA_LIBS) -lpthread -lm -o $@

# Fuzz targets: parsers of untrusted input (server responses, DNS answers,
# configuration URLs, /proc/self/cgroup), with the runtime they use.
EXPORT_FUZZ_RT := $(filter src/rt/%,$(CORE_SRC))
FUZZERS += $(BUILD)/fuzz/fuzz_http_response $(BUILD)/fuzz/fuzz_url \
	$(BUILD)/fuzz/fuzz_http_dns $(BUILD)/fuzz/fuzz_http_cgroup

$(BUILD)/fuzz/fuzz_http_response: tests/fuzz/fuzz_http_response.c src/export/http_parse.c $(EXPORT_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/export/http_parse.c $(EXPORT_FUZZ_RT) -o $@
$(BUILD)/fuzz/fuzz_url: tests/fuzz/fuzz_url.c src/export/url.c src/export/ip.c $(EXPORT_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/export/url.c src/export/ip.c $(EXPORT_FUZZ_RT) -o $@
# The DNS parsers alone: no sockets, no URLs.
$(BUILD)/fuzz/fuzz_http_dns: tests/fuzz/fuzz_http_dns.c src/export/dns.c src/export/ip.c $(EXPORT_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/export/dns.c src/export/ip.c $(EXPORT_FUZZ_RT) -o $@
$(BUILD)/fuzz/fuzz_http_cgroup: tests/fuzz/fuzz_http_cgroup.c src/export/cgroup.c $(EXPORT_FUZZ_RT)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< src/export/cgroup.c $(EXPORT_FUZZ_RT) -o $@
