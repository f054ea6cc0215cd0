#!/usr/bin/env python3
"""Avro records with bytes, fixed, decimals, arrays, maps and unions, produced through the schema registry, and the
JSON lines a job writes of them checked against what they hold, for the specs.

    avro_json.py produce BROKERS URL TOPIC SCHEMA N SEED
        Registers SCHEMA (a file) as TOPIC's latest schema in the registry at URL (Confluent's API) and produces N
        records made from SEED, framed as Confluent's serializer frames them.
    avro_json.py check SCHEMA N SEED DIR
        Reads every file under DIR as strict UTF-8, each line with Python's json module (no NaN or Infinity tokens,
        no control character in a string), and checks that the lines are the N records made from SEED, each as
        kingest writes Avro as JSON: the fields in the schema's order; bytes and fixed as Avro's JSON encoding writes
        them (each byte the code point of its value); decimals as exact JSON numbers in plain notation with the
        scale's digits; arrays as arrays, maps as objects with their keys sorted; a union's value untagged (of a union
        of string and bytes, text when its bytes are UTF-8, else as bytes); NaN and infinities as the strings "NaN",
        "Infinity", "-Infinity". The fields fastavro's own JSON writer writes the same way (all but decimals, unions
        and non-finite doubles) are also compared with what it writes. Prints the number of lines checked.

The schema is the one the spec gives; the records are made for its fields by name (see make_record).
"""
import decimal
import io
import json
import math
import os
import random
import sys

import fastavro

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import avro_produce  # noqa: E402  (the registry and the framing)


def make_record(rng, i):
    """Record I: every byte value in the first records' bytes, empty arrays and maps in many."""
    def some_bytes(n):
        return bytes(rng.randrange(256) for _ in range(n))

    def dec(digits, scale):  # exact: made from its text, not through a context's precision
        v = rng.randrange(-10 ** digits + 1, 10 ** digits)
        return decimal.Decimal("%de-%d" % (v, scale))

    x = rng.choice([rng.uniform(-1e6, 1e6), 0.1, -0.0, 1e300, 5e-324] + ([math.nan, math.inf, -math.inf] if i % 7 == 0 else []))
    return {
        "id": i,
        "b": bytes(range(256)) if i == 1 else bytes(range(i % 256, 256, 37)) if i % 3 == 0 else some_bytes(rng.randrange(13)),
        "f": some_bytes(4),
        "price": dec(rng.choice([1, 15, 16, 20]), 4),
        "big": dec(rng.choice([3, 17, 30, 38]), 2),
        "ints": [rng.randrange(-100, 100) for _ in range(rng.choice([0, 0, 1, 3]))],
        "blobs": [some_bytes(rng.randrange(4)) for _ in range(rng.choice([0, 1, 2]))],
        "meta": {"k%d" % rng.randrange(20): some_bytes(2) for _ in range(rng.choice([0, 0, 1, 3]))},
        "maybe": None if i % 2 else some_bytes(3),
        "choice": [None, "text-%d" % i, {"n": i}][i % 3],
        "either": "t\u00e9%d" % i if i % 2 else b"\xff\x00" + some_bytes(2) if i % 4 else "\u20ac".encode(),
        "kind": ["A", "B"][i % 2],
        "x": x,
        "name": "n\u00e9\u20ac\U0001F600\n\"\\%d" % i,
    }


def records(n, seed):
    rng = random.Random(int(seed))
    return [make_record(rng, i) for i in range(1, n + 1)]


def produce(brokers, url, topic, schema_path, n, seed):
    text = avro_produce.schema_text(schema_path)
    schema = fastavro.parse_schema(json.loads(text))
    frame_id, _ = avro_produce.register("confluent", url, topic, text)
    p = avro_produce.Producer({"bootstrap.servers": brokers, "linger.ms": 20, "message.timeout.ms": 30000})
    failed = []
    for r in records(n, seed):
        buf = io.BytesIO()
        buf.write(b"\0" + frame_id)
        fastavro.schemaless_writer(buf, schema, r)
        p.produce(topic, buf.getvalue(), on_delivery=lambda err, _: err and failed.append(err))
        p.poll(0)
    if p.flush(60) or failed:
        sys.exit("avro_json: producing to %s failed: %s" % (topic, failed[:1] or "timed out"))


class Num(str):
    """A JSON number as its text, so that a decimal's digits are compared exactly."""


def no_constant(name):
    raise ValueError("a bare %s in the JSON (not JSON)" % name)


def expected(r):
    """Record R as kingest writes it: decimals as the text of their digits (Num)."""
    def as_bytes(b):
        return b.decode("latin-1")

    def utf8_or_bytes(b):  # a union of string and bytes: text when it is UTF-8
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            return as_bytes(b)

    def number(v):
        if isinstance(v, float):
            if math.isnan(v):
                return "NaN"
            if math.isinf(v):
                return "Infinity" if v > 0 else "-Infinity"
            return v
        return v

    return {
        "id": r["id"],
        "b": as_bytes(r["b"]),
        "f": as_bytes(r["f"]),
        "price": Num(format(r["price"], "f")),
        "big": Num(format(r["big"], "f")),
        "ints": r["ints"],
        "blobs": [as_bytes(b) for b in r["blobs"]],
        "meta": {k: as_bytes(r["meta"][k]) for k in sorted(r["meta"])},
        "maybe": None if r["maybe"] is None else as_bytes(r["maybe"]),
        "choice": r["choice"],
        "either": r["either"] if isinstance(r["either"], str) else utf8_or_bytes(r["either"]),
        "kind": r["kind"],
        "x": number(r["x"]),
        "name": r["name"],
    }


def same(got, want, path):
    """Whether GOT (numbers as Num) equals WANT: integers and doubles by value (the sign of zero too), decimals (Num)
    by their text; raises naming the first difference."""
    def bad():
        raise AssertionError("%s: %r, expected %r" % (path, got, want))

    if isinstance(got, Num):
        if isinstance(want, Num):
            ok = str(got) == str(want)
        elif isinstance(want, bool) or not isinstance(want, (int, float)):
            ok = False
        elif isinstance(want, int):
            ok = not any(c in got for c in ".eE") and int(got) == want
        else:
            ok = float(got) == want and math.copysign(1, float(got)) == math.copysign(1, want)
        if not ok:
            bad()
    elif isinstance(want, dict):
        if not isinstance(got, dict) or list(got) != list(want):
            raise AssertionError("%s: keys %r, expected %r (in that order)" % (path, list(got), list(want)))
        for k in want:
            same(got[k], want[k], path + "." + k)
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            bad()
        for k, (g, w) in enumerate(zip(got, want)):
            same(g, w, "%s[%d]" % (path, k))
    elif type(got) is not type(want) or got != want:
        bad()


def check(schema_path, n, seed, root):
    schema = fastavro.parse_schema(json.loads(avro_produce.schema_text(schema_path)))
    lines = []
    for folder, _, names in os.walk(root):
        for name in sorted(names):
            with open(os.path.join(folder, name), "rb") as f:
                data = f.read()
            try:
                text = data.decode("utf-8")  # strict: a byte that is not UTF-8 is an error
            except UnicodeDecodeError as e:
                sys.exit("avro_json: %s is not UTF-8: %s" % (name, e))
            lines.extend(line for line in text.split("\n") if line)
    recs = {r["id"]: r for r in records(n, seed)}
    if len(lines) != n:
        sys.exit("avro_json: %d lines under %s, expected %d" % (len(lines), root, n))
    seen = set()
    for line in lines:
        try:
            got = json.loads(line, parse_float=Num, parse_int=Num, parse_constant=no_constant)
        except ValueError as e:
            sys.exit("avro_json: a line is not JSON (%s): %s" % (e, line[:200]))
        r = recs.get(int(got.get("id", -1)))
        if r is None or r["id"] in seen:
            sys.exit("avro_json: unexpected or repeated record: %s" % line[:200])
        seen.add(r["id"])
        try:
            same(got, expected(r), "record %d" % r["id"])
        except AssertionError as e:
            sys.exit("avro_json: %s\n  line: %s" % (e, line[:300]))
        # fastavro's JSON writer, for the fields it writes the same way.
        out = io.StringIO()
        fastavro.json_writer(out, schema, [r])
        theirs = json.loads(out.getvalue())
        mine = json.loads(line)
        for k in ("id", "b", "f", "ints", "blobs", "meta", "kind", "name"):
            if mine[k] != theirs[k]:
                sys.exit("avro_json: record %d: %s is %r, fastavro writes %r" % (r["id"], k, mine[k], theirs[k]))
        if not (isinstance(r["x"], float) and not math.isfinite(r["x"])) and mine["x"] != theirs["x"]:
            sys.exit("avro_json: record %d: x is %r, fastavro writes %r" % (r["id"], mine["x"], theirs["x"]))
    print(len(lines))


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "produce" and len(sys.argv) == 8:
        produce(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7])
    elif cmd == "check" and len(sys.argv) == 6:
        check(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
