#!/usr/bin/env python3
"""An HTTP proxy in front of the schema registry of scripts/registry that answers for it when told to, for the
specs of a registry that stumbles (spec/integration/avro_spec.lua, engine/tests/test_registry.c).

    registry_proxy.py TARGET_URL [--port N] [--port-file FILE] [--tls-cert PEM --tls-key PEM] [--basic USER:PASSWORD] [--bearer TOKEN]

Listens on 127.0.0.1:N (0, the default: a free port, printed as "registry_proxy: listening on 127.0.0.1:<port>"
on stdout and written to FILE) and hands each request on to TARGET_URL (the registry's base URL, path kept),
relaying its answer. Requests to /_proxy/... control it instead:

    /_proxy/fault?match=TEXT&status=429&times=3&retry_after=2
        the next 3 requests whose path holds TEXT get HTTP 429 with "Retry-After: 2" and are not handed on;
        times=-1 (the default) for every one. retry_after_date=S sends an HTTP date S seconds ahead instead.
    /_proxy/fault?match=TEXT&hang=5&times=1
        the next such request gets no answer: the connection is held 5 s, then closed.
    /_proxy/fault?match=TEXT&forget=1
        a registry restarted from an empty store: 404 with Confluent's "Schema not found" body.
    /_proxy/fault?match=TEXT&body_file=FILE&times=1
        answered 200 with the bytes of FILE (an answer the registry gave before: a stale replica).
    /_proxy/clear      every fault goes.
    /_proxy/log        the requests seen, one JSON object a line: {"time", "path", "answer"} (answer: the status
                       given, "hang", or "passed <status>").

Faults are tried in the order given; one used up is skipped. Runs until killed (SIGTERM).

With --tls-cert and --tls-key it speaks HTTPS (that certificate and key, PEM) instead of HTTP; with --basic, a
request without basic authentication of USER:PASSWORD gets HTTP 401 with Confluent's error body and is not handed
on (controls included), as a secured registry answers.
"""
import base64
import ssl
import argparse
import email.utils
import http.server
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

lock = threading.Lock()
faults = []
seen = []


def fault_for(path):
    """The fault that takes a request for PATH (its count taken), or None."""
    with lock:
        for f in faults:
            if f["times"] != 0 and f["match"] in path:
                if f["times"] > 0:
                    f["times"] -= 1
                return dict(f)
    return None


def log(path, answer):
    with lock:
        seen.append({"time": time.time(), "path": path, "answer": answer})


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    target = ""
    basic = None  # "user:password" every request must authenticate with, or None
    bearer = None  # a token a request may authenticate with instead ("Authorization: Bearer TOKEN"), or None

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def control(self, url):
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        if url.path == "/_proxy/clear":
            with lock:
                faults.clear()
            return self.answer(200, b"cleared\n")
        if url.path == "/_proxy/log":
            with lock:
                text = "".join(json.dumps(s) + "\n" for s in seen)
            return self.answer(200, text.encode())
        if url.path == "/_proxy/fault":
            f = {"match": q.get("match", ""), "times": int(q.get("times", "-1")), "status": int(q.get("status", "0")),
                 "retry_after": q.get("retry_after"), "retry_after_date": q.get("retry_after_date"),
                 "hang": float(q.get("hang", "0")), "forget": q.get("forget") == "1", "body_file": q.get("body_file")}
            with lock:
                faults.append(f)
            return self.answer(200, b"added\n")
        return self.answer(404, b"no such control\n")

    def authorized(self):
        """True when no credentials are asked for or the request has them; else answers 401 itself."""
        if self.basic is None and self.bearer is None:
            return True
        given = self.headers.get("Authorization", "")
        if self.basic is not None and given == "Basic " + base64.b64encode(self.basic.encode()).decode():
            return True
        if self.bearer is not None and given == "Bearer " + self.bearer:
            return True
        log(self.path, 401)
        body = json.dumps({"error_code": 401, "message": "Unauthorized: bad user name or password"}).encode()
        self.answer(401, body, [("WWW-Authenticate", 'Basic realm="SchemaRegistry"'),
                                ("Content-Type", "application/vnd.schemaregistry.v1+json")])
        return False

    def do_GET(self):
        if not self.authorized():
            return
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/_proxy/"):
            return self.control(url)
        f = fault_for(self.path)
        if f and f["hang"] > 0:
            log(self.path, "hang")
            time.sleep(f["hang"])
            self.close_connection = True
            return
        if f and f["forget"]:
            log(self.path, 404)
            body = json.dumps({"error_code": 40403, "message": "Schema not found"}).encode()
            return self.answer(404, body, [("Content-Type", "application/vnd.schemaregistry.v1+json")])
        if f and f["body_file"]:
            log(self.path, 200)
            with open(f["body_file"], "rb") as stale:
                body = stale.read()
            return self.answer(200, body, [("Content-Type", "application/vnd.schemaregistry.v1+json")])
        if f:
            headers = []
            if f["retry_after"] is not None:
                headers.append(("Retry-After", f["retry_after"]))
            if f["retry_after_date"] is not None:
                when = time.time() + float(f["retry_after_date"])
                headers.append(("Retry-After", email.utils.formatdate(when, usegmt=True)))
            log(self.path, f["status"])
            return self.answer(f["status"], b'{"error_code":%d,"message":"from the fault proxy"}' % f["status"],
                               headers)
        req = urllib.request.Request(self.target + self.path, headers={"Accept": self.headers.get("Accept", "*/*")})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, body, ctype = resp.status, resp.read(), resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as e:
            status, body, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
        except OSError:
            log(self.path, "passed, no answer")
            self.close_connection = True
            return
        log(self.path, "passed %d" % status)
        self.answer(status, body, [("Content-Type", ctype)] if ctype else [])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("target")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--basic")
    p.add_argument("--bearer")
    a = p.parse_args()
    Handler.target = a.target.rstrip("/")
    Handler.basic = a.basic
    Handler.bearer = a.bearer
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    if a.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(a.tls_cert, a.tls_key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(a.port_file + ".tmp", a.port_file)
    print("registry_proxy: listening on 127.0.0.1:%d" % port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
