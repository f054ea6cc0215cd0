#!/usr/bin/env python3
"""An HTTP proxy in front of a NameNode's WebHDFS port that sets off a fault at a chosen request (the NameNode
killed, safe mode entered, a folder made read-only), for the fault specs (spec/integration/hdfs_faults_spec.lua).

    namenode_proxy.py LISTEN_PORT TARGET_PORT --op RENAME [--match TEXT] --nth N --then CMD [--before]

Listens on 127.0.0.1:LISTEN_PORT and hands each connection on to the NameNode at 127.0.0.1:TARGET_PORT. The
N-th request whose query has op=OP (and whose request line holds TEXT) is the fault: it is handed on and the NameNode's answer read, then CMD runs
(through the shell, e.g. "scripts/hadoop stop-namenode"), and the client's connection is closed without the
answer: the NameNode did the operation, then died before its client heard. With --before, CMD runs before the
request is handed on (the NameNode dies before it sees it). Every request's line goes to stdout; "fault: ..."
is printed once CMD has run. Runs until killed (SIGTERM).
"""
import argparse
import socket
import subprocess
import sys
import threading

lock = threading.Lock()
seen = 0


def log(text):
    with lock:
        print(text, flush=True)


def read_head(sock):
    """Reads up to the end of an HTTP head; returns (head, bytes read past it)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def read_answer(sock, rest=b""):
    """Reads one HTTP answer (its head and a Content-Length body, or up to the end of the connection)."""
    head, body = rest, b""
    if head is None:
        return
    if b"\r\n\r\n" not in head:
        more, body = read_head(sock)
        if more is None:
            return
        head = more
    length = None
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while length is None or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (dst,):
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def handle(client, a):
    global seen
    try:
        head, rest = read_head(client)
        if head is None:
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        fault = False
        target = line.split(" ")[1] if " " in line else ""
        if (("op=" + a.op + "&") in target or target.endswith("op=" + a.op)) and a.match in target:
            with lock:
                seen += 1
                fault = seen == a.nth
        log(line + ("   <- fault" if fault else ""))
        if fault and a.before:
            subprocess.run(a.then, shell=True)
            log("fault: ran the command before handing on " + line)
        try:
            upstream = socket.create_connection(("127.0.0.1", a.target_port), timeout=30)
        except OSError:
            return  # the NameNode is gone: the client gets no answer
        upstream.sendall(head + rest)
        if fault and not a.before:
            read_answer(upstream)
            subprocess.run(a.then, shell=True)
            log("fault: the NameNode answered, ran the command, dropped the answer to " + line)
            upstream.close()
            return
        t = threading.Thread(target=pump, args=(upstream, client), daemon=True)
        t.start()
        pump(client, upstream)
        t.join()
        upstream.close()
    except OSError:
        pass
    finally:
        client.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("listen_port", type=int)
    p.add_argument("target_port", type=int)
    p.add_argument("--op", required=True)
    p.add_argument("--match", default="")
    p.add_argument("--nth", type=int, default=1)
    p.add_argument("--then", required=True)
    p.add_argument("--before", action="store_true")
    a = p.parse_args()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", a.listen_port))
    server.listen(64)
    log(f"namenode_proxy: 127.0.0.1:{a.listen_port} -> 127.0.0.1:{a.target_port}, fault at {a.op} #{a.nth}")
    while True:
        client, _ = server.accept()
        threading.Thread(target=handle, args=(client, a), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
