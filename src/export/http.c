/* One HTTP/1.1 POST per connection; see http.h. */
#include "export/http.h"

#include "export/net.h"
#include "export/resolve.h"
#include "export/tls.h"
#include "rt/rt.h"
#include "rt/sys.h"

#define MAX_ADDRESSES 4

struct http_conn {
	int fd;
	struct export_tls_session *tls;
};

static int conn_send(struct http_conn *c, const void *p, size_t n, uint64_t deadline_ns)
{
	if (c->tls)
		return export_tls_write_all(c->tls, p, n, deadline_ns);
	return export_send_all(c->fd, p, n, deadline_ns);
}

static long conn_recv(struct http_conn *c, void *p, size_t n, uint64_t deadline_ns)
{
	if (c->tls)
		return export_tls_read(c->tls, p, n, deadline_ns);
	return export_recv_some(c->fd, p, n, deadline_ns);
}

static int conn_open(const struct http_request *req, struct http_conn *c)
{
	const struct export_url *url = req->url;
	c->fd = -1;
	c->tls = NULL;
	struct export_sockaddr addrs[MAX_ADDRESSES];
	int n_addrs;
	if (url->scheme == EXPORT_URL_UNIX) {
		n_addrs = export_sockaddr_unix(&addrs[0], url->path);
		if (n_addrs < 0)
			return n_addrs;
		n_addrs = 1;
	} else {
		n_addrs = export_resolve(url->host, url->port, addrs, MAX_ADDRESSES,
					 req->connect_deadline_ns);
		if (n_addrs < 0)
			return n_addrs;
	}
	int rc = -ECONNREFUSED;
	int connected = -1;
	for (int i = 0; i < n_addrs && c->fd < 0; i++) {
		rc = export_connect(&addrs[i], req->connect_deadline_ns);
		if (rc >= 0) {
			c->fd = rc;
			connected = i;
		} else if (rc == -ETIMEDOUT) {
			break;
		}
	}
	if (c->fd < 0)
		return rc;
	if (url->scheme != EXPORT_URL_HTTPS)
		return 0;
	if (!req->tls) {
		rc = -EINVAL;
	} else {
		/* The handshake belongs to connecting: bounded by its deadline. */
		rc = export_tls_open(req->tls, c->fd, url->host, false, req->connect_deadline_ns,
				     &c->tls);
		if (rc == -EPROTONOSUPPORT) {
			sys_close(c->fd);
			c->fd = export_connect(&addrs[connected], req->connect_deadline_ns);
			rc = c->fd < 0 ? c->fd
				       : export_tls_open(req->tls, c->fd, url->host, true,
							 req->connect_deadline_ns, &c->tls);
		}
	}
	if (rc < 0) {
		if (c->fd >= 0)
			sys_close(c->fd);
		c->fd = -1;
		return rc;
	}
	return 0;
}

static void conn_close(struct http_conn *c, uint64_t deadline_ns)
{
	if (c->tls)
		export_tls_close(c->tls, deadline_ns);
	if (c->fd >= 0)
		sys_close(c->fd);
	c->tls = NULL;
	c->fd = -1;
}

static void build_head(const struct http_request *req, size_t body_len, struct rt_buf *head)
{
	const struct export_url *url = req->url;
	rt_buf_appendf(head, "POST %s HTTP/1.1\r\n", req->target);
	if (url->scheme == EXPORT_URL_UNIX) {
		rt_buf_append_str(head, "Host: localhost\r\n");
	} else {
		bool default_port = (url->scheme == EXPORT_URL_HTTP && url->port == 80) ||
				    (url->scheme == EXPORT_URL_HTTPS && url->port == 443);
		rt_buf_appendf(head, url->host_is_ipv6 ? "Host: [%s]" : "Host: %s", url->host);
		if (!default_port)
			rt_buf_appendf(head, ":%u", url->port);
		rt_buf_append_str(head, "\r\n");
	}
	if (req->headers)
		rt_buf_append_str(head, req->headers);
	rt_buf_appendf(head, "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
}

static int read_response(struct http_conn *c, uint64_t deadline_ns, struct http_response *resp)
{
	uint8_t *buf = rt_malloc(HTTP_MAX_RESPONSE);
	if (!buf)
		return -ENOMEM;
	size_t len = 0;
	int rc = -EPROTO;
	/* Each round reads at least one byte, so the loop ends by the buffer
	 * size, the end of the stream, or the deadline. */
	for (;;) {
		if (len == HTTP_MAX_RESPONSE) {
			/* An oversized body: the status is all we need. */
			rc = resp->headers_complete ? 0 : -EPROTO;
			resp->body_truncated = true;
			break;
		}
		long got = conn_recv(c, buf + len, HTTP_MAX_RESPONSE - len, deadline_ns);
		if (got < 0) {
			rc = (int)got;
			break;
		}
		len += (size_t)got;
		enum http_parse_result r = http_response_parse(buf, len, got == 0, resp);
		if (r == HTTP_PARSE_DONE) {
			rc = 0;
			break;
		}
		if (r == HTTP_PARSE_ERROR) {
			rc = -EPROTO;
			break;
		}
	}
	rt_free(buf);
	return rc;
}

int http_post(const struct http_request *req, struct http_response *resp)
{
	rt_memset(resp, 0, sizeof(*resp));
	size_t body_len = 0;
	for (size_t i = 0; i < req->n_body; i++)
		body_len += req->body[i].len;
	struct rt_buf head = {0};
	build_head(req, body_len, &head);
	if (head.failed) {
		rt_buf_free(&head);
		return -ENOMEM;
	}
	struct http_conn conn;
	int rc = conn_open(req, &conn);
	if (rc == 0)
		rc = conn_send(&conn, head.data, head.len, req->deadline_ns);
	for (size_t i = 0; i < req->n_body && rc == 0; i++)
		if (req->body[i].len > 0)
			rc = conn_send(&conn, req->body[i].data, req->body[i].len, req->deadline_ns);
	/* A server may answer (403, 413) and close before reading the whole
	 * body: its answer still says what happened. */
	if (rc == 0 || (conn.fd >= 0 && (rc == -EPIPE || rc == -ECONNRESET))) {
		int sent = rc;
		rc = read_response(&conn, req->deadline_ns, resp);
		if (rc < 0 && sent < 0)
			rc = sent;
	}
	conn_close(&conn, req->deadline_ns);
	rt_buf_free(&head);
	return rc;
}
