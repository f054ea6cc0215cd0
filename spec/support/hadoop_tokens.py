#!/usr/bin/env python3
"""Prints the delegation tokens of the Hadoop credentials file given as the only argument (its Writable form: "HDTS",
version 0, then the tokens), one a line: the token in its URL-safe form (what WebHDFS takes as delegation=) and its
password in hex."""
import base64, sys
data = open(sys.argv[1], "rb").read()
assert data[:5] == b"HDTS\0", "not a Hadoop credentials file"
at = 5
def vint():
    global at
    b = data[at] - 256 if data[at] > 127 else data[at]
    at += 1
    if b >= -112:
        return b
    n, neg = (-111 - b, False) if b >= -120 else (-119 - b, True)
    v = 0
    for _ in range(n):
        v = (v << 8) | data[at]
        at += 1
    return ~v if neg else v
def chunk():
    global at
    n = vint()
    at += n
    return data[at - n:at]
for _ in range(vint()):
    chunk()
    start = at
    chunk()
    password = chunk()
    chunk()
    chunk()
    print(base64.urlsafe_b64encode(data[start:at]).decode().rstrip("="), password.hex())
