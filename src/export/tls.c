/* TLS client on mbedTLS 3.6 (vendor/stowaway_mbedtls_config.h); see tls.h.
 *
 * This file is the only one that includes mbedTLS headers.  It also
 * provides the platform hooks the configuration names: the counting
 * allocator on rt_calloc, the clock, gmtime and the PSA random source.
 */
#include "export/tls.h"

#include "export/net.h"
#include "export/text.h"
#include "rt/rt.h"
#include "rt/sys.h"

#include "mbedtls/error.h"
#include "mbedtls/platform.h"
#include "mbedtls/platform_util.h"
#include "mbedtls/psa_util.h"
#include "mbedtls/ssl.h"
#include "mbedtls/x509_crt.h"
#include "psa/crypto.h"

#define CA_FILE_MAX (8u * 1024 * 1024)
#define TLS_MAX_ROUNDS 10000
/* Transport failures reported by our BIO callbacks. */
#define BIO_ERR_SEND (-0x004E)
#define BIO_ERR_RECV (-0x004C)
#define BIO_ERR_RESET (-0x0050)

/* ---- platform hooks named by vendor/stowaway_mbedtls_config.h ---- */

static atomic_size_t heap_current;
static atomic_size_t heap_peak;

/* Each block carries its size in a 16-byte header (keeps 16-byte alignment). */
void *export_tls_calloc(size_t n, size_t size)
{
	if (size != 0 && n > (SIZE_MAX - 16) / size)
		return NULL;
	size_t bytes = n * size;
	uint8_t *base = rt_calloc(1, bytes + 16);
	if (!base)
		return NULL;
	rt_memcpy(base, &bytes, sizeof(bytes));
	size_t now = atomic_fetch_add(&heap_current, bytes) + bytes;
	size_t peak = atomic_load(&heap_peak);
	while (now > peak && !atomic_compare_exchange_weak(&heap_peak, &peak, now)) {
	}
	return base + 16;
}

void export_tls_free(void *p)
{
	if (!p)
		return;
	uint8_t *base = (uint8_t *)p - 16;
	size_t bytes;
	rt_memcpy(&bytes, base, sizeof(bytes));
	atomic_fetch_sub(&heap_current, bytes);
	rt_free(base);
}

size_t export_tls_heap_current(void) { return atomic_load(&heap_current); }
size_t export_tls_heap_peak(void) { return atomic_load(&heap_peak); }
void export_tls_heap_reset_peak(void) { atomic_store(&heap_peak, atomic_load(&heap_current)); }

long long export_tls_time(long long *now)
{
	long long t = (long long)(rt_realtime_ns() / RT_NS_PER_SEC);
	if (now)
		*now = t;
	return t;
}

mbedtls_ms_time_t mbedtls_ms_time(void)
{
	return (mbedtls_ms_time_t)(rt_monotonic_ns() / 1000000u);
}

struct tm *mbedtls_platform_gmtime_r(const mbedtls_time_t *tt, struct tm *tm_buf)
{
	struct export_civil_time c;
	export_civil_from_unix((int64_t)*tt, &c);
	if (c.year - 1900 > INT32_MAX || c.year - 1900 < INT32_MIN)
		return NULL;
	rt_memset(tm_buf, 0, sizeof(*tm_buf));
	tm_buf->tm_year = (int)(c.year - 1900);
	tm_buf->tm_mon = (int)c.month - 1;
	tm_buf->tm_mday = (int)c.day;
	tm_buf->tm_hour = (int)c.hour;
	tm_buf->tm_min = (int)c.minute;
	tm_buf->tm_sec = (int)c.second;
	tm_buf->tm_wday = (int)c.weekday;
	tm_buf->tm_yday = (int)c.yearday;
	return tm_buf;
}

/* Zeroing that the compiler may not drop (key material). */
void mbedtls_platform_zeroize(void *buf, size_t len)
{
	volatile uint8_t *p = buf;
	for (size_t i = 0; i < len; i++)
		p[i] = 0;
}

psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *context,
					     uint8_t *output, size_t output_size,
					     size_t *output_length)
{
	RT_UNUSED(context);
	if (!rt_random_bytes(output, output_size))
		return PSA_ERROR_INSUFFICIENT_ENTROPY;
	*output_length = output_size;
	return PSA_SUCCESS;
}

/* ---- configuration: trust anchors ---- */

struct export_tls_config {
	mbedtls_x509_crt ca_chain;
	mbedtls_ssl_config ssl;      /* TLS 1.2 and 1.3 */
	mbedtls_ssl_config ssl_tls12; /* TLS 1.2 without RSA-PSS, see export_tls_open */
	char ca_path[256];
};

static const char *const system_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Alpine, Arch */
	"/etc/pki/tls/certs/ca-bundle.crt",                  /* RHEL, Fedora, CentOS */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL 7+ */
	"/etc/ssl/ca-bundle.pem",                            /* openSUSE, SLES */
	"/etc/ssl/cert.pem",                                 /* Alpine, BSDs */
	"/etc/pki/tls/cacert.pem",                           /* OpenELEC */
};

/* Parses a PEM (or DER) bundle; number of certificates loaded or -errno. */
static int load_bundle(mbedtls_x509_crt *chain, const char *path)
{
	long fd = sys_open(path, O_RDONLY, 0);
	if (fd < 0)
		return (int)fd;
	struct statx st = {0};
	long r = rt_statx((int)fd, "", AT_EMPTY_PATH, STATX_SIZE, &st);
	if (r < 0 || st.stx_size == 0 || st.stx_size > CA_FILE_MAX) {
		sys_close((int)fd);
		return r < 0 ? (int)r : -EFBIG;
	}
	size_t size = (size_t)st.stx_size;
	uint8_t *buf = rt_malloc(size + 1);
	if (!buf) {
		sys_close((int)fd);
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < size) {
		long n = sys_read((int)fd, buf + got, size - got);
		if (n == -EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	sys_close((int)fd);
	buf[got] = '\0';
	size_t before = 0;
	for (const mbedtls_x509_crt *c = chain; c && c->raw.p; c = c->next)
		before++;
	/* PEM input must include the terminating NUL in its length. */
	int rc = mbedtls_x509_crt_parse(chain, buf, got + 1);
	rt_free(buf);
	if (rc < 0)
		return -EINVAL;
	size_t after = 0;
	for (const mbedtls_x509_crt *c = chain; c && c->raw.p; c = c->next)
		after++;
	return (int)(after - before);
}

static bool setup_ssl_config(struct export_tls_config *cfg, mbedtls_ssl_config *conf,
			     mbedtls_ssl_protocol_version max_version)
{
	int rc = mbedtls_ssl_config_defaults(conf, MBEDTLS_SSL_IS_CLIENT,
					     MBEDTLS_SSL_TRANSPORT_STREAM,
					     MBEDTLS_SSL_PRESET_DEFAULT);
	if (rc != 0) {
		rt_error("tls: configuration failed (-0x%x)", (unsigned)-rc);
		return false;
	}
	/* Verification is required, always. */
	mbedtls_ssl_conf_authmode(conf, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(conf, &cfg->ca_chain, NULL);
	mbedtls_ssl_conf_rng(conf, mbedtls_psa_get_random, MBEDTLS_PSA_RANDOM_STATE);
	mbedtls_ssl_conf_min_tls_version(conf, MBEDTLS_SSL_VERSION_TLS1_2);
	mbedtls_ssl_conf_max_tls_version(conf, max_version);
	if (max_version == MBEDTLS_SSL_VERSION_TLS1_2) {
		static const uint16_t tls12_sig_algs[] = {
			MBEDTLS_TLS1_3_SIG_ECDSA_SECP256R1_SHA256,
			MBEDTLS_TLS1_3_SIG_ECDSA_SECP384R1_SHA384,
			MBEDTLS_TLS1_3_SIG_ECDSA_SECP521R1_SHA512,
			MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA256,
			MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA384,
			MBEDTLS_TLS1_3_SIG_RSA_PKCS1_SHA512,
			MBEDTLS_TLS1_3_SIG_NONE,
		};
		mbedtls_ssl_conf_sig_algs(conf, tls12_sig_algs);
	}
	return true;
}

static bool psa_ready(void)
{
	static atomic_int done;
	if (atomic_load(&done))
		return true;
	if (psa_crypto_init() != PSA_SUCCESS)
		return false;
	atomic_store(&done, 1);
	return true;
}

struct export_tls_config *export_tls_config_create(const char *ca_file)
{
	if (!psa_ready()) {
		rt_error("tls: the crypto library could not start (no getrandom?): HTTPS uploads "
			 "are disabled");
		return NULL;
	}
	struct export_tls_config *cfg = rt_calloc(1, sizeof(*cfg));
	if (!cfg)
		return NULL;
	mbedtls_x509_crt_init(&cfg->ca_chain);
	mbedtls_ssl_config_init(&cfg->ssl);
	mbedtls_ssl_config_init(&cfg->ssl_tls12);
	int loaded = -ENOENT;
	if (ca_file && ca_file[0]) {
		loaded = load_bundle(&cfg->ca_chain, ca_file);
		rt_strlcpy(cfg->ca_path, ca_file, sizeof(cfg->ca_path));
		if (loaded <= 0) {
			rt_error("tls: no usable certificate in STOWAWAY_CA_FILE=%s (%d): HTTPS "
				 "uploads are disabled",
				 ca_file, loaded);
			export_tls_config_destroy(cfg);
			return NULL;
		}
	} else {
		for (size_t i = 0; i < RT_ARRAY_LEN(system_bundles) && loaded <= 0; i++) {
			loaded = load_bundle(&cfg->ca_chain, system_bundles[i]);
			rt_strlcpy(cfg->ca_path, system_bundles[i], sizeof(cfg->ca_path));
		}
		if (loaded <= 0) {
			rt_error("tls: no CA certificate bundle found (looked in /etc/ssl and "
				 "/etc/pki; set STOWAWAY_CA_FILE): HTTPS uploads are disabled, "
				 "nothing is sent unverified");
			export_tls_config_destroy(cfg);
			return NULL;
		}
	}
	if (!setup_ssl_config(cfg, &cfg->ssl, MBEDTLS_SSL_VERSION_TLS1_3) ||
	    !setup_ssl_config(cfg, &cfg->ssl_tls12, MBEDTLS_SSL_VERSION_TLS1_2)) {
		export_tls_config_destroy(cfg);
		return NULL;
	}
	rt_debug("tls: trusting %d certificates from %s", loaded, cfg->ca_path);
	return cfg;
}

void export_tls_config_destroy(struct export_tls_config *cfg)
{
	if (!cfg)
		return;
	mbedtls_ssl_config_free(&cfg->ssl);
	mbedtls_ssl_config_free(&cfg->ssl_tls12);
	mbedtls_x509_crt_free(&cfg->ca_chain);
	rt_free(cfg);
}

/* ---- sessions ---- */

struct export_tls_session {
	mbedtls_ssl_context ssl;
	int fd;
};

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	struct export_tls_session *s = ctx;
	long w = sys_sendto(s->fd, buf, len, 0x4000 /* MSG_NOSIGNAL */ | 0x40 /* MSG_DONTWAIT */);
	if (w == -EAGAIN || w == -EINTR)
		return MBEDTLS_ERR_SSL_WANT_WRITE;
	if (w == -EPIPE || w == -ECONNRESET)
		return BIO_ERR_RESET;
	if (w < 0)
		return BIO_ERR_SEND;
	return (int)w;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	struct export_tls_session *s = ctx;
	long r = sys_recvfrom(s->fd, buf, len, 0x40 /* MSG_DONTWAIT */);
	if (r == -EAGAIN || r == -EINTR)
		return MBEDTLS_ERR_SSL_WANT_READ;
	if (r == -ECONNRESET)
		return BIO_ERR_RESET;
	if (r < 0)
		return BIO_ERR_RECV;
	return (int)r;
}

/* Waits as mbedTLS asked; 0 to call again, or -errno. */
static int wait_for(struct export_tls_session *s, int rc, uint64_t deadline_ns)
{
	if (rc == MBEDTLS_ERR_SSL_WANT_READ)
		return export_wait_fd(s->fd, EXPORT_POLLIN, deadline_ns);
	if (rc == MBEDTLS_ERR_SSL_WANT_WRITE)
		return export_wait_fd(s->fd, EXPORT_POLLOUT, deadline_ns);
	if (rc == MBEDTLS_ERR_SSL_ASYNC_IN_PROGRESS || rc == MBEDTLS_ERR_SSL_CRYPTO_IN_PROGRESS)
		return 0;
	if (rc == BIO_ERR_RESET)
		return -ECONNRESET;
	return -EPROTO;
}

static void log_verify_failure(struct export_tls_session *s, const char *hostname)
{
	static atomic_uint last_flags;
	uint32_t flags = mbedtls_ssl_get_verify_result(&s->ssl);
	if (atomic_exchange(&last_flags, flags) == flags)
		return; /* said already */
	const char *why = "not trusted";
	if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH)
		why = "issued for another host name";
	else if (flags & MBEDTLS_X509_BADCERT_EXPIRED)
		why = "expired";
	else if (flags & MBEDTLS_X509_BADCERT_FUTURE)
		why = "not valid yet";
	else if (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED)
		why = "not signed by a trusted CA";
	rt_warn("tls: certificate of %s rejected: %s (flags 0x%x); nothing was sent", hostname,
		why, flags);
}

int export_tls_open(struct export_tls_config *cfg, int fd, const char *hostname, bool tls12_only,
		    uint64_t deadline_ns, struct export_tls_session **out)
{
	*out = NULL;
	struct export_tls_session *s = rt_calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = fd;
	mbedtls_ssl_init(&s->ssl);
	int rc = mbedtls_ssl_setup(&s->ssl, tls12_only ? &cfg->ssl_tls12 : &cfg->ssl);
	/* SNI, and the name every certificate is checked against. */
	if (rc == 0)
		rc = mbedtls_ssl_set_hostname(&s->ssl, hostname);
	if (rc != 0) {
		mbedtls_ssl_free(&s->ssl);
		rt_free(s);
		return -ENOMEM;
	}
	mbedtls_ssl_set_bio(&s->ssl, s, bio_send, bio_recv, NULL);
	int result = -ETIMEDOUT;
	for (int round = 0; round < TLS_MAX_ROUNDS; round++) {
		rc = mbedtls_ssl_handshake(&s->ssl);
		if (rc == 0) {
			result = 0;
			break;
		}
		if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
			log_verify_failure(s, hostname);
			result = -EACCES;
			break;
		}
		if (rc == MBEDTLS_ERR_SSL_ILLEGAL_PARAMETER && !tls12_only &&
		    mbedtls_ssl_get_version_number(&s->ssl) == MBEDTLS_SSL_VERSION_TLS1_2) {
			result = -EPROTONOSUPPORT;
			break;
		}
		result = wait_for(s, rc, deadline_ns);
		if (result < 0) {
			if (result == -EPROTO)
				rt_debug("tls: handshake with %s failed (-0x%x)", hostname,
					 (unsigned)-rc);
			break;
		}
		result = -ETIMEDOUT;
	}
	if (result < 0) {
		mbedtls_ssl_free(&s->ssl);
		rt_free(s);
		return result;
	}
	*out = s;
	return 0;
}

int export_tls_write_all(struct export_tls_session *s, const void *p, size_t n,
			 uint64_t deadline_ns)
{
	const unsigned char *cur = p;
	for (int round = 0; n > 0 && round < TLS_MAX_ROUNDS * 64; round++) {
		int w = mbedtls_ssl_write(&s->ssl, cur, n);
		if (w > 0) {
			cur += w;
			n -= (size_t)w;
			continue;
		}
		int rc = wait_for(s, w, deadline_ns);
		if (rc < 0)
			return rc;
	}
	return n == 0 ? 0 : -ETIMEDOUT;
}

long export_tls_read(struct export_tls_session *s, void *p, size_t n, uint64_t deadline_ns)
{
	for (int round = 0; round < TLS_MAX_ROUNDS; round++) {
		int r = mbedtls_ssl_read(&s->ssl, p, n);
		if (r > 0)
			return r;
		if (r == 0 || r == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || r == MBEDTLS_ERR_SSL_CONN_EOF)
			return 0;
		if (r == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
			continue;
		int rc = wait_for(s, r, deadline_ns);
		if (rc < 0)
			return rc;
	}
	return -ETIMEDOUT;
}

void export_tls_close(struct export_tls_session *s, uint64_t deadline_ns)
{
	if (!s)
		return;
	/* One close_notify, without waiting on a peer that does not read. */
	if (rt_monotonic_ns() < deadline_ns)
		(void)mbedtls_ssl_close_notify(&s->ssl);
	mbedtls_ssl_free(&s->ssl);
	rt_free(s);
}
