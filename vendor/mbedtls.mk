# mbedTLS 3.6 LTS for the agentless exporter, built from the pinned Debian
# source package (vendor/fetch-mbedtls.sh) with vendor/stowaway_mbedtls_config.h.
#
# The library is compiled freestanding with hidden visibility, then
# partially linked into one object with --gc-sections, rooted at the
# mbedTLS/PSA symbols src/export/tls.c uses, so only code reachable from our
# TLS client ends up in libstowaway.so.  The few C library functions that
# mbedTLS calls are defined (hidden) by vendor/mbedtls_libc.c for the .so;
# test programs get them from their libc.

include vendor/mbedtls.pin
# The source is unpacked once under build/vendor, shared by every ARCH.
MBEDTLS_DIR     := build/vendor/mbedtls-$(MBEDTLS_VERSION)
MBEDTLS_STAMP   := $(MBEDTLS_DIR)/.stowaway-unpacked
MBEDTLS_INC     := -isystem $(MBEDTLS_DIR)/include -isystem vendor -DMBEDTLS_CONFIG_FILE='"stowaway_mbedtls_config.h"'

MBEDTLS_MODULES := aes asn1parse asn1write base64 bignum bignum_core bignum_mod \
	bignum_mod_raw block_cipher chacha20 chachapoly cipher cipher_wrap constant_time \
	ecdh ecdsa ecp ecp_curves gcm hkdf md oid pem pk pk_ecc pk_wrap pkparse platform \
	platform_util poly1305 psa_crypto psa_crypto_aead psa_crypto_cipher psa_crypto_client \
	psa_crypto_driver_wrappers_no_static psa_crypto_ecp psa_crypto_ffdh psa_crypto_hash \
	psa_crypto_mac psa_crypto_rsa psa_crypto_slot_management psa_util rsa rsa_alt_helpers \
	sha256 sha512 ssl_ciphersuites ssl_client ssl_debug_helpers_generated ssl_msg ssl_tls \
	ssl_tls12_client ssl_tls13_client ssl_tls13_generic ssl_tls13_keys x509 x509_crt

MBEDTLS_LIB_OBJ := $(patsubst %,$(BUILD)/vendor/obj/%.o,$(MBEDTLS_MODULES))
MBEDTLS_CFLAGS  := -std=c99 -O2 -g -fPIC -fvisibility=hidden -ffreestanding \
	-fno-stack-protector -fno-common -fno-strict-aliasing -ffunction-sections \
	-fdata-sections $(ARCH_CFLAGS) -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=0 $(MBEDTLS_INC) \
	-DMBEDTLS_TEST_SW_INET_PTON # our own inet_pton, not libc's

# The partially linked library and our libc replacements, in the .so only.
MBEDTLS_OBJ      := $(BUILD)/vendor/mbedtls.o
MBEDTLS_LIBC_OBJ := $(BUILD)/vendor/obj/mbedtls_libc.o
LIB_EXTRA_OBJ    += $(MBEDTLS_OBJ) $(MBEDTLS_LIBC_OBJ)

$(MBEDTLS_STAMP): vendor/fetch-mbedtls.sh
	vendor/fetch-mbedtls.sh build/vendor && touch $@

# $(BUILD)/vendor/mbedtls names the pinned tree for tools that read no make
# variables (src/export/tls.lintflags, used by tests/lint.sh).
$(BUILD)/vendor/mbedtls: $(MBEDTLS_STAMP)
	ln -sfn mbedtls-$(MBEDTLS_VERSION) $@
lint: $(BUILD)/vendor/mbedtls

$(MBEDTLS_LIB_OBJ): $(BUILD)/vendor/obj/%.o: $(MBEDTLS_STAMP) vendor/stowaway_mbedtls_config.h
	@mkdir -p $(dir $@)
	$(CC) $(MBEDTLS_CFLAGS) -c $(MBEDTLS_DIR)/library/$*.c -o $@

$(MBEDTLS_LIBC_OBJ): vendor/mbedtls_libc.c
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

# Roots: every mbedtls_/psa_ symbol the TLS glue refers to.
$(MBEDTLS_OBJ): $(MBEDTLS_LIB_OBJ) $(BUILD)/obj/export/tls.o
	roots=$$($(CROSS)nm -u $(BUILD)/obj/export/tls.o | awk '$$2 ~ /^(mbedtls_|psa_)/ { print "-u", $$2 }'); \
	$(CROSS)ld -r --gc-sections $$roots -o $@ $(MBEDTLS_LIB_OBJ)

# The glue includes mbedTLS headers.
$(BUILD)/obj/export/tls.o $(BUILD)/san/export/tls.o $(BUILD)/ubsan/export/tls.o: $(MBEDTLS_STAMP) vendor/stowaway_mbedtls_config.h
$(BUILD)/obj/export/tls.o $(BUILD)/san/export/tls.o $(BUILD)/ubsan/export/tls.o: LIB_CFLAGS += $(MBEDTLS_INC)
test-build: $(BUILD)/vendor/mbedtls
