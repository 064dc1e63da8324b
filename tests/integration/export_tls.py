#!/usr/bin/env python3
# needs: build/tests/export_driver
"""Agentless (HTTPS) upload through mbedTLS against a loopback TLS server
with a test CA made here with openssl: the right CA works (TLS 1.3 and 1.2,
ECDSA and RSA, name and IP), a wrong CA or a wrong host name never lets a
request reach the server, a missing bundle is one clear error, and the API
key is never sent over plain HTTP."""
import os
import ssl
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance as cf  # noqa: E402
import export_common as ec  # noqa: E402

API_KEY = "0123456789abcdef0123456789abcdef"


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", name + ".key", "-out", name + ".crt", "-days", "2",
            "-subj", "/CN=stowaway test " + name,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


def make_leaf(d, ca, name, san, rsa=False):
    key = ["rsa:2048"] if rsa else ["ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    openssl("req", "-newkey", *key, "-nodes", "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=" + san.split(",")[0].split(":")[1], cwd=d)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n" % san)
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", name + ".crt", "-days", "2", "-extfile", name + ".ext",
            cwd=d)


def context(d, leaf, max_version=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, leaf + ".crt"), os.path.join(d, leaf + ".key"))
    if max_version:
        ctx.maximum_version = max_version
    return ctx


def env_for(url, ca_file, **extra):
    env = {"DD_API_KEY": API_KEY, "DD_PROFILING_AGENTLESS": "true", "STOWAWAY_INTAKE_URL": url,
           "STOWAWAY_CA_FILE": ca_file,
           "DD_SERVICE": "tls-test", "STOWAWAY_LOG_LEVEL": "info"}
    env.update(extra)
    return env


def main():
    d = tempfile.mkdtemp(prefix="stowaway-tls-")
    try:
        make_ca(d, "ca")
        make_ca(d, "otherca")
        make_leaf(d, "ca", "localhost", "DNS:localhost,IP:127.0.0.1")
        make_leaf(d, "ca", "localhost_rsa", "DNS:localhost,IP:127.0.0.1", rsa=True)
        make_leaf(d, "ca", "otherhost", "DNS:other.example")
    except (OSError, subprocess.CalledProcessError) as e:
        ec.check("tls_test_ca_generated", False, str(e))
        ec.finish()
    ca = os.path.join(d, "ca.crt")
    other_ca = os.path.join(d, "otherca.crt")
    profile = ec.sample_profile()
    profile_path = os.path.join(d, "profile.pprof.gz")
    with open(profile_path, "wb") as f:
        f.write(profile)

    cases = [
        ("tls13_ecdsa_name", "localhost", None, "localhost"),
        ("tls12_ecdsa_name", "localhost", ssl.TLSVersion.TLSv1_2, "localhost"),
        ("tls13_rsa_name", "localhost_rsa", None, "localhost"),
        ("tls12_rsa_ip", "localhost_rsa", ssl.TLSVersion.TLSv1_2, "127.0.0.1"),
    ]
    for name, leaf, maxv, host in cases:
        rec = ec.Recorder([202])
        srv, port = ec.start_tls(rec, context(d, leaf, maxv))
        url = "https://%s:%d/api/v2/profile" % (host, port)
        r = ec.run_driver("datadog", profile_path, env_for(url, ca))
        ok = r["code"] == 0 and len(rec.requests) == 1
        ec.check("intake_%s_upload_ok" % name, ok, r["stdout"] + r["stderr"][-2000:])
        if rec.requests:
            req = rec.requests[0]
            ec.check("intake_%s_path_and_key" % name,
                     req["target"] == "/api/v2/profile" and ec.header(req, "DD-API-KEY") == API_KEY,
                     "%s %s" % (req["target"], req["headers"]))
            errors, _ = cf.check_datadog_intake(req, API_KEY, decode_profile=False)
            ec.check("intake_%s_conformance" % name, not errors, str(errors))
            parts, err = ec.parse_multipart(ec.header(req, "Content-Type"), req["body"])
            ec.check("intake_%s_multipart" % name,
                     parts is not None and len(parts) == 2 and parts[1]["data"] == profile,
                     err or "")
        if r["results"]:
            # Heap used by mbedTLS for one upload (CA chain excluded).
            print("INFO intake_%s tls_heap_peak_bytes=%d" % (name, r["results"][0]["tls_heap_peak"]))
        ec.stop(srv, rec)

    # A wrong CA, or a certificate for another name: nothing reaches the server.
    for name, leaf, ca_file, host in (("wrong_ca", "localhost", other_ca, "localhost"),
                                      ("wrong_hostname", "otherhost", ca, "localhost"),
                                      ("ip_not_in_cert", "otherhost", ca, "127.0.0.1")):
        rec = ec.Recorder([202])
        srv, port = ec.start_tls(rec, context(d, leaf))
        r = ec.run_driver("datadog", profile_path,
                          env_for("https://%s:%d/api/v2/profile" % (host, port), ca_file))
        ec.check("intake_%s_rejected" % name,
                 r["code"] == 1 and r["results"] and r["results"][0]["rc"] == -13,
                 r["stdout"] + r["stderr"][-2000:])
        ec.check("intake_%s_no_request" % name, not rec.requests, str(len(rec.requests)))
        ec.check("intake_%s_clear_error" % name, "certificate of %s rejected" % host in r["stderr"],
                 r["stderr"])
        ec.check("intake_%s_not_retried" % name, srv.handshake_failures <= 1,
                 str(srv.handshake_failures))
        ec.stop(srv, rec)

    # No usable bundle: one clear error, no exporter, nothing sent.
    rec = ec.Recorder([202])
    srv, port = ec.start_tls(rec, context(d, "localhost"))
    empty = os.path.join(d, "empty.pem")
    open(empty, "w").close()
    r = ec.run_driver("datadog", profile_path,
                      env_for("https://localhost:%d/api/v2/profile" % port, empty))
    ec.check("intake_no_bundle_refuses", r["code"] == 2 and rec.connections == 0, r["stdout"])
    ec.check("intake_no_bundle_clear_error",
             len([l for l in r["stderr"].splitlines() if "HTTPS uploads are disabled" in l]) == 1,
             r["stderr"])

    # The API key never travels over plain HTTP.
    plain = ec.Recorder([202])
    psrv, pport = ec.start_tcp(plain)
    r = ec.run_driver("datadog", profile_path,
                      env_for("http://127.0.0.1:%d/api/v2/profile" % pport, ca))
    ec.check("intake_plain_http_refused",
             r["code"] == 2 and plain.connections == 0 and "https" in r["stderr"], r["stderr"])
    ec.stop(psrv, plain)

    # 403 from the intake: the reason names the API key, logged once.
    rec403 = ec.Recorder([403])
    srv403, port403 = ec.start_tls(rec403, context(d, "localhost"))
    r = ec.run_driver("datadog", profile_path,
                      env_for("https://localhost:%d/api/v2/profile" % port403, ca,
                              STOWAWAY_LOG_LEVEL="warn"), runs=2)
    lines = [l for l in r["stderr"].splitlines() if "403" in l]
    ec.check("intake_403_logged_once", len(lines) == 1 and "API key" in lines[0], r["stderr"])
    ec.check("intake_403_key_not_logged", API_KEY not in r["stderr"])
    ec.stop(srv403, rec403)
    ec.stop(srv, rec)
    ec.finish()


if __name__ == "__main__":
    main()
