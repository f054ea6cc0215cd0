#!/usr/bin/env python3
"""azure_blob.py: a small Azure Blob Storage client of the tests' own (Shared Key, from Python's hmac and the
standard library), independent of kingest's: it reads back what kingest published, makes containers and blobs for
the specs, and computes the signatures the C tests compare with.

    azure_blob.py ENDPOINT ACCOUNT KEY mkcontainer CONTAINER
    azure_blob.py ENDPOINT ACCOUNT KEY rmcontainer CONTAINER
    azure_blob.py ENDPOINT ACCOUNT KEY put CONTAINER BLOB FILE      (Put Blob; '-' reads stdin)
    azure_blob.py ENDPOINT ACCOUNT KEY get CONTAINER BLOB           (the blob's bytes on stdout)
    azure_blob.py ENDPOINT ACCOUNT KEY list CONTAINER [PREFIX]      (JSON: name, size, etag, committed)
    azure_blob.py ENDPOINT ACCOUNT KEY cat CONTAINER PREFIX         (every blob under PREFIX, in name order)
    azure_blob.py sign ACCOUNT KEY METHOD URL LENGTH [HEADER...]    (the string to sign and its signature, JSON)

ENDPOINT is the account's blob endpoint (http://127.0.0.1:PORT/ACCOUNT for Azurite). Exit status 1 with the
service's error code on stderr for an error answer.
"""
import base64
import hashlib
import hmac
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from email.utils import formatdate

VERSION = "2021-08-06"
STANDARD = ["content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
            "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range"]


def string_to_sign(account, method, url, headers, length):
    """Azure's string to sign, written from the service's documentation (Shared Key, version 2015-02-21 on)."""
    lower = {}
    for name, value in headers:
        lower.setdefault(name.strip().lower(), []).append(" ".join(value.split()))
    parts = [method]
    for name in STANDARD:
        if name == "content-length":
            parts.append(str(length) if length else "")
        else:
            parts.append(",".join(lower.get(name, [""])))
    text = "\n".join(parts) + "\n"
    for name in sorted(n for n in lower if n.startswith("x-ms-")):
        text += "%s:%s\n" % (name, ",".join(lower[name]))
    u = urllib.parse.urlsplit(url)
    text += "/" + account + (u.path or "/")
    params = {}
    for pair in filter(None, u.query.split("&")):  # decoded, '+' kept: Azure escapes with %XX only
        name, _, value = pair.partition("=")
        params.setdefault(urllib.parse.unquote(name).lower(), []).append(urllib.parse.unquote(value))
    for name in sorted(params):
        text += "\n%s:%s" % (name, ",".join(sorted(params[name])))
    return text


def signature(key, text):
    return base64.b64encode(hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest()).decode()


class Blob:
    def __init__(self, endpoint, account, key):
        self.endpoint, self.account, self.key = endpoint.rstrip("/"), account, key

    def request(self, method, path, query="", body=b"", headers=()):
        url = self.endpoint + "/" + urllib.parse.quote(path) + ("?" + query if query else "")
        hs = [("x-ms-date", formatdate(usegmt=True)), ("x-ms-version", VERSION)] + list(headers)
        if method in ("PUT", "POST"):  # urllib would send a form's type otherwise, unsigned
            hs.append(("Content-Type", "application/octet-stream"))
        text = string_to_sign(self.account, method, url, hs, len(body))
        hs.append(("Authorization", "SharedKey %s:%s" % (self.account, signature(self.key, text))))
        req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method)
        for name, value in hs:
            req.add_header(name, value)
        if method in ("PUT", "POST"):
            req.add_header("Content-Length", str(len(body)))
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def check(self, answer, what):
        status, headers, body = answer
        if status >= 300:
            sys.stderr.write("%s: HTTP %d %s\n" % (what, status, headers.get("x-ms-error-code", "")))
            sys.exit(1)
        return answer

    def list(self, container, prefix="", uncommitted=False):
        out, marker = [], ""
        while True:
            q = "restype=container&comp=list&prefix=" + urllib.parse.quote(prefix, safe="")
            if uncommitted:
                q += "&include=uncommittedblobs"
            if marker:
                q += "&marker=" + urllib.parse.quote(marker, safe="")
            _, _, body = self.check(self.request("GET", container, q), "list " + container)
            root = ET.fromstring(body)
            for b in root.iter("Blob"):
                props = b.find("Properties")
                out.append({"name": b.findtext("Name"), "size": int(props.findtext("Content-Length") or 0),
                            "etag": (props.findtext("Etag") or "").strip('"')})
            marker = root.findtext("NextMarker") or ""
            if not marker:
                return out


def main(argv):
    if argv[:1] == ["sign"]:
        account, key, method, url, length = argv[1:6]
        headers = [tuple(h.split(":", 1)) for h in argv[6:]]
        text = string_to_sign(account, method, url, headers, int(length))
        print(json.dumps({"string_to_sign": text, "signature": signature(key, text)}))
        return 0
    endpoint, account, key, cmd = argv[:4]
    args = argv[4:]
    b = Blob(endpoint, account, key)
    if cmd == "mkcontainer":
        status, headers, _ = b.request("PUT", args[0], "restype=container")
        if status >= 300 and headers.get("x-ms-error-code") != "ContainerAlreadyExists":
            b.check((status, headers, b""), "mkcontainer " + args[0])
    elif cmd == "rmcontainer":
        status, headers, _ = b.request("DELETE", args[0], "restype=container")
        if status >= 300 and headers.get("x-ms-error-code") != "ContainerNotFound":
            b.check((status, headers, b""), "rmcontainer " + args[0])
    elif cmd == "put":
        data = sys.stdin.buffer.read() if args[2] == "-" else open(args[2], "rb").read()
        b.check(b.request("PUT", args[0] + "/" + args[1], body=data, headers=[("x-ms-blob-type", "BlockBlob")]),
                "put " + args[1])
    elif cmd == "get":
        _, _, body = b.check(b.request("GET", args[0] + "/" + args[1]), "get " + args[1])
        sys.stdout.buffer.write(body)
    elif cmd == "list":
        committed = {o["name"] for o in b.list(args[0], args[1] if len(args) > 1 else "")}
        every = b.list(args[0], args[1] if len(args) > 1 else "", uncommitted=True)
        for o in every:
            o["committed"] = o["name"] in committed
        print(json.dumps(every))
    elif cmd == "cat":
        for o in b.list(args[0], args[1]):
            _, _, body = b.check(b.request("GET", args[0] + "/" + o["name"]), "get " + o["name"])
            sys.stdout.buffer.write(body)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
