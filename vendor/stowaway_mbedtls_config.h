/* stowaway's mbedTLS 3.6 configuration: a minimal TLS 1.2 + 1.3 client
 * with certificate verification, on stowaway's runtime layer.
 *
 * Used as MBEDTLS_CONFIG_FILE for the vendored library (vendor/mbedtls.mk)
 * and for src/export/tls.c.  Everything not listed here is off: no server,
 * no net_sockets, no filesystem I/O, no threading, no entropy module (the
 * PSA RNG comes from getrandom), no debug output.
 */
#ifndef STOWAWAY_MBEDTLS_CONFIG_H
#define STOWAWAY_MBEDTLS_CONFIG_H

#include <stddef.h>

/* ---- platform: our allocator, clock and RNG (defined in src/export/tls.c) ---- */
void *export_tls_calloc(size_t n, size_t size);
void export_tls_free(void *p);
long long export_tls_time(long long *now);
size_t rt_snprintf(char *buf, size_t cap, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define MBEDTLS_HAVE_ASM
#define MBEDTLS_HAVE_TIME
#define MBEDTLS_HAVE_TIME_DATE
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_PLATFORM_CALLOC_MACRO export_tls_calloc
#define MBEDTLS_PLATFORM_FREE_MACRO export_tls_free
#define MBEDTLS_PLATFORM_TIME_TYPE_MACRO long long
#define MBEDTLS_PLATFORM_TIME_MACRO export_tls_time
#define MBEDTLS_PLATFORM_MS_TIME_ALT      /* mbedtls_ms_time() in tls.c */
#define MBEDTLS_PLATFORM_GMTIME_R_ALT     /* our civil-date conversion */
#define MBEDTLS_PLATFORM_ZEROIZE_ALT      /* mbedtls_platform_zeroize() in tls.c */
#define MBEDTLS_PLATFORM_SNPRINTF_MACRO rt_snprintf
#define MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG   /* mbedtls_psa_external_get_random: getrandom */
#define MBEDTLS_NO_PLATFORM_ENTROPY
#define MBEDTLS_DEPRECATED_REMOVED

/* ---- symmetric crypto and hashes ---- */
#define MBEDTLS_AES_C
#define MBEDTLS_GCM_C
#define MBEDTLS_CHACHA20_C
#define MBEDTLS_POLY1305_C
#define MBEDTLS_CHACHAPOLY_C
#define MBEDTLS_CIPHER_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA224_C
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA384_C
#define MBEDTLS_SHA512_C
#define MBEDTLS_HKDF_C

/* ---- public keys ---- */
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_ECP_C
#define MBEDTLS_ECP_NIST_OPTIM
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_SECP384R1_ENABLED
#define MBEDTLS_ECP_DP_SECP521R1_ENABLED
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C
#define MBEDTLS_OID_C
#define MBEDTLS_BASE64_C
#define MBEDTLS_PEM_PARSE_C

/* ---- PSA (required by TLS 1.3) ---- */
#define MBEDTLS_PSA_CRYPTO_C
#define MBEDTLS_USE_PSA_CRYPTO

/* ---- X.509 ---- */
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_RSASSA_PSS_SUPPORT /* TLS 1.3 servers with RSA keys sign with PSS */
#define MBEDTLS_X509_MAX_INTERMEDIATE_CA 8

/* ---- TLS client ---- */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_SSL_PROTO_TLS1_3
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_TLS1_3_COMPATIBILITY_MODE
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_SSL_ENCRYPT_THEN_MAC
/* A server may send full 16 KiB records; what we send is fragmented. */
#define MBEDTLS_SSL_IN_CONTENT_LEN 16384
#define MBEDTLS_SSL_OUT_CONTENT_LEN 8192

#endif
