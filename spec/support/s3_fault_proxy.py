#!/usr/bin/env python3
"""An HTTP proxy in front of an S3 server (the s3proxy of scripts/s3, or moto) that sets off a fault at chosen
requests, for the fault cases of spec/integration/s3_spec.lua.

    s3_fault_proxy.py LISTEN_PORT TARGET_PORT [--method M] [--match TEXT] (--nth N | --first N)
                      [--then CMD [--before]] [--cut]

Listens on 127.0.0.1:LISTEN_PORT and hands every request on to the server at 127.0.0.1:TARGET_PORT, one request
at a time on each connection (keep-alive is followed: every request is looked at, not just a connection's first).
A request is a candidate when its method is M (any, without --method) and its target (path and query) holds TEXT.
The fault is the N-th candidate (--nth N) or each of the first N (--first N). What it does:
  - by default the proxy answers it itself with 503 and S3's SlowDown error document, never handing it on;
  - --cut: the head and half the body are handed on, then both connections are closed (a connection lost in the
    middle of a request);
  - --then CMD: as --cut, and CMD runs (through the shell, e.g. "scripts/s3 stop") once half the body is handed on
    and before the connections close: the server killed in the middle of the request;
  - --then CMD --before: CMD runs before the request is handed on, which then goes on as any other (to a server
    that is gone, when CMD stopped it: the client gets no answer). CMD has the request's bucket and key (path-style,
    decoded) in FAULT_BUCKET and FAULT_KEY: another client can write that key first.
Every request's line goes to stdout, marked "<- fault" when it is one; "fault: ..." follows each fault. Runs until
killed (SIGTERM).
"""
import argparse
import os
import socket
import subprocess
import sys
import threading
import urllib.parse
import uuid

lock = threading.Lock()
seen = 0

SLOWDOWN = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
            '<Message>Please reduce your request rate.</Message><Resource>{resource}</Resource>'
            '<RequestId>{rid}</RequestId></Error>')


def log(text):
    with lock:
        print(text, flush=True)


class Conn:
    """A socket with a read buffer."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            return False
        self.buf += chunk
        return True

    def head(self):
        """The next HTTP head (up to and with its blank line), or None at the end of the connection."""
        while b"\r\n\r\n" not in self.buf:
            if not self.fill():
                return None
        head, _, self.buf = self.buf.partition(b"\r\n\r\n")
        return head + b"\r\n\r\n"

    def take(self, n):
        """Exactly N bytes (fewer only if the connection ends)."""
        while len(self.buf) < n:
            if not self.fill():
                break
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def line(self):
        while b"\r\n" not in self.buf:
            if not self.fill():
                return None
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line + b"\r\n"


def header(head, name):
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name:
            return v.strip().decode("latin-1")
    return None


def body_of(conn, head):
    """The body that follows HEAD on CONN (Content-Length or chunked, kept as sent); None if the connection ended."""
    length = header(head, b"content-length")
    if length is not None:
        data = conn.take(int(length))
        return data if len(data) == int(length) else None
    if (header(head, b"transfer-encoding") or "").lower() == "chunked":
        out = b""
        while True:
            size_line = conn.line()
            if size_line is None:
                return None
            out += size_line
            size = int(size_line.split(b";")[0].strip(), 16)
            chunk = conn.take(size + 2)
            out += chunk
            if size == 0:
                # Trailers (none from S3 servers) would follow before a final blank line: the 2 bytes taken.
                return out
    return b""


def answer_body(conn, method, head):
    """The body of an answer HEAD to METHOD (none for HEAD, 1xx, 204 and 304); None: read to the end."""
    status = int(head.split(b" ", 2)[1])
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return b""
    if header(head, b"content-length") is None and (header(head, b"transfer-encoding") or "").lower() != "chunked":
        while conn.fill():
            pass
        data, conn.buf = conn.buf, b""
        return data
    return body_of(conn, head)


def without_expect(head):
    """HEAD without an Expect line (the proxy answers 100 Continue itself; Expect is never a signed header)."""
    lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"expect:")]
    return b"\r\n".join(lines)


def is_fault(a, method, target):
    global seen
    if (a.method and method != a.method) or a.match not in target:
        return False
    with lock:
        seen += 1
        return seen == a.nth if a.nth else seen <= a.first


def slowdown(client, line, target):
    body = SLOWDOWN.format(resource=target.split("?")[0], rid=uuid.uuid4().hex[:16].upper()).encode()
    client.sendall(b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nContent-Length: "
                   + str(len(body)).encode() + b"\r\n\r\n" + body)
    log("fault: answered 503 SlowDown to " + line)


def handle(sock, a):
    client, upstream = Conn(sock), None
    try:
        while True:
            head = client.head()
            if head is None:
                return
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target = (line.split(" ") + ["", ""])[:2]
            fault = is_fault(a, method, target)
            log(line + ("   <- fault" if fault else ""))
            if (header(head, b"expect") or "").lower() == "100-continue":
                sock.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                head = without_expect(head)
            if fault and not (a.cut or a.then):
                if body_of(client, head) is None:
                    return
                slowdown(sock, line, target)
                continue
            if fault and a.before:
                path = urllib.parse.unquote(target.split("?")[0]).lstrip("/")
                bucket, _, key = path.partition("/")
                subprocess.run(a.then, shell=True, env=dict(os.environ, FAULT_BUCKET=bucket, FAULT_KEY=key))
                log("fault: ran the command before handing on " + line)
                fault = False
            if upstream is None:
                try:
                    upstream = Conn(socket.create_connection(("127.0.0.1", a.target_port), timeout=60))
                except OSError:
                    return  # the server is gone: the client gets no answer
            if fault:
                length = int(header(head, b"content-length") or 0)
                upstream.sock.sendall(head + client.take(length // 2))
                if a.then:
                    subprocess.run(a.then, shell=True)
                    log("fault: handed on half the body, ran the command, cut the connection of " + line)
                else:
                    log("fault: handed on half the body and cut the connection of " + line)
                return
            body = body_of(client, head)
            if body is None:
                return
            upstream.sock.sendall(head + body)
            answer = upstream.head()
            while answer is not None and answer.split(b" ", 2)[1].startswith(b"1"):
                answer = upstream.head()  # an interim answer: the client has had its 100 from the proxy
            if answer is None:
                return
            data = answer_body(upstream, method, answer)
            if data is None:
                return
            sock.sendall(answer + data)
            if (header(answer, b"connection") or "").lower() == "close":
                return
    except (OSError, ValueError):
        pass
    finally:
        if upstream is not None:
            upstream.sock.close()
        sock.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("listen_port", type=int)
    p.add_argument("target_port", type=int)
    p.add_argument("--method", default="")
    p.add_argument("--match", default="")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--nth", type=int, default=0)
    g.add_argument("--first", type=int, default=0)
    p.add_argument("--then", default="")
    p.add_argument("--before", action="store_true")
    p.add_argument("--cut", action="store_true")
    a = p.parse_args()
    if a.before and not a.then:
        p.error("--before needs --then")
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", a.listen_port))
    server.listen(64)
    which = f"#{a.nth}" if a.nth else f"the first {a.first}"
    log(f"s3_fault_proxy: 127.0.0.1:{a.listen_port} -> 127.0.0.1:{a.target_port}, fault at {a.method or 'any'} "
        f"{a.match!r} {which}")
    while True:
        client, _ = server.accept()
        threading.Thread(target=handle, args=(client, a), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
