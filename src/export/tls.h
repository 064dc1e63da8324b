/* TLS client for the agentless exporter, on the vendored mbedTLS 3.6.
 * Certificate verification is always required, with SNI and a host name
 * check; there is no way to turn it off. */
#ifndef STOWAWAY_EXPORT_TLS_H
#define STOWAWAY_EXPORT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct export_tls_config;
struct export_tls_session;

/* Loads the trust anchors: ca_file when non-empty, else the first system
 * bundle found (Debian, RHEL, Alpine, SUSE paths).  NULL, after one clear
 * error line, when no usable bundle exists: the caller must not upload. */
struct export_tls_config *export_tls_config_create(const char *ca_file);
void export_tls_config_destroy(struct export_tls_config *cfg);

/* Runs the handshake on a connected non-blocking socket fd (which the
 * session does not own) and verifies the peer for `hostname`.  0 and
 * *out, or -errno (-EACCES: the certificate was rejected).
 *
 * -EPROTONOSUPPORT: the server chose TLS 1.2 and signed with RSA-PSS,
 * which mbedTLS 3.6 offers (TLS 1.3 needs it) but rejects in TLS 1.2;
 * reconnect and call again with tls12_only, which offers TLS 1.2 with
 * PKCS#1 v1.5 RSA signatures only.  (The server picked TLS 1.2 itself,
 * so this loses nothing it would have negotiated.) */
int export_tls_open(struct export_tls_config *cfg, int fd, const char *hostname, bool tls12_only,
		    uint64_t deadline_ns, struct export_tls_session **out);
int export_tls_write_all(struct export_tls_session *s, const void *p, size_t n,
			 uint64_t deadline_ns);
/* Bytes read, 0 at the end of the stream (close_notify or EOF), or -errno. */
long export_tls_read(struct export_tls_session *s, void *p, size_t n, uint64_t deadline_ns);
/* Sends close_notify (best effort, bounded by deadline) and frees s. */
void export_tls_close(struct export_tls_session *s, uint64_t deadline_ns);

/* Heap bytes held by mbedTLS right now and at most since the last reset:
 * the cost of one upload is peak - current before the upload. */
size_t export_tls_heap_current(void);
size_t export_tls_heap_peak(void);
void export_tls_heap_reset_peak(void);

#endif
