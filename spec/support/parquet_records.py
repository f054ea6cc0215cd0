#!/usr/bin/env python3
"""Produces the Parquet spec's Avro records, and prints the truth they hold, for the specs.

    parquet_records.py schema
        Prints the records' Avro schema (JSON): a record of every type Parquet output writes, required and
        optional (unions of null with it, null first or last).
    parquet_records.py produce BROKERS URL TOPIC N
        Registers the schema as TOPIC's latest in the registry's Confluent API at URL, produces N records framed
        for it (record i to partition i % 2), waits until all are acknowledged, then prints each record as
        fastavro decodes the very bytes produced, one JSON line each (keys sorted; bytes, fixed and enum values
        as strings of code points 0-255, as parquet_read.py prints them), in produce order.

Among the records: int and long at their limits, -0.0, unicode, empty strings and bytes, a string of 300,000
bytes, and nulls in every optional column. Needs confluent-kafka and fastavro."""
import io
import json
import os
import struct
import sys

import fastavro
from confluent_kafka import Producer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from avro_produce import register  # noqa: E402

SCHEMA = {
    "type": "record", "name": "Reading", "namespace": "kingest.parquet",
    "fields": [
        {"name": "seq", "type": "long"},
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "ok", "type": "boolean"},
        {"name": "maybe", "type": ["null", "boolean"]},
        {"name": "n", "type": "int"},
        {"name": "on", "type": ["int", "null"]},
        {"name": "f", "type": "float"},
        {"name": "d", "type": ["null", "double"]},
        {"name": "raw", "type": "bytes"},
        {"name": "oraw", "type": ["bytes", "null"]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {"name": "okind", "type": ["null", "Kind"]},
        {"name": "tag", "type": {"type": "fixed", "name": "Tag", "size": 4}},
        {"name": "otag", "type": ["null", "kingest.parquet.Tag"]},
    ],
}


def record(i):
    r = {
        "seq": i,
        "id": i * 7919 - 1000,
        "name": "name-%d" % i,
        "note": None if i % 3 == 0 else "note %d \u00fc" % i,
        "ok": i % 2 == 0,
        "maybe": None if i % 4 == 0 else i % 3 == 0,
        "n": i - 150,
        "on": None if i % 5 == 0 else i * 3,
        "f": i / 4,
        "d": None if i % 2 else i * 1.1,
        "raw": bytes([i % 256, 0, 255]),
        "oraw": None if i % 6 == 0 else bytes([i % 7]) * (i % 5),
        "kind": "ABC"[i % 3],
        "okind": None if i % 7 == 0 else "CBA"[i % 3],
        "tag": struct.pack(">I", i),
        "otag": None if i % 2 == 0 else b"\xff\x00\x01\x02",
    }
    if i == 1:
        r.update(id=2**63 - 1, n=2**31 - 1)
    elif i == 2:
        r.update(id=-2**63, n=-2**31)
    elif i == 3:
        r.update(name="h\u00e9llo \u2713 \u65e5\u672c \U0001F389", note="\u00e9\u00e8")
    elif i == 4:
        r.update(name="", note="", raw=b"", oraw=b"")
    elif i == 5:
        r.update(name="x" * 300000)
    elif i == 6:
        r.update(f=-0.0, d=-0.0)
    return r


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return value


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "schema":
        print(json.dumps(SCHEMA, separators=(",", ":")))
        return
    if len(sys.argv) != 6 or sys.argv[1] != "produce":
        sys.exit(__doc__)
    brokers, url, topic, n = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    text = json.dumps(SCHEMA, separators=(",", ":"))
    frame_id, _ = register("confluent", url, topic, text)
    schema = fastavro.parse_schema(json.loads(text))
    p = Producer({"bootstrap.servers": brokers, "linger.ms": 20, "message.timeout.ms": 30000,
                  "message.max.bytes": 2000000})
    failed, payloads = [], []
    for i in range(n):
        buf = io.BytesIO()
        buf.write(b"\0" + frame_id)
        fastavro.schemaless_writer(buf, schema, record(i))
        payloads.append(buf.getvalue())
        while True:
            try:
                p.produce(topic, payloads[-1], partition=i % 2,
                          on_delivery=lambda err, _: err and failed.append(err))
                break
            except BufferError:
                p.poll(0.1)
    if p.flush(60) or failed:
        sys.exit("parquet_records: producing to %s failed: %s" % (topic, failed[:1] or "timed out"))
    for payload in payloads:
        r = fastavro.schemaless_reader(io.BytesIO(payload[5:]), schema)
        print(json.dumps({k: plain(v) for k, v in r.items()}, sort_keys=True))


if __name__ == "__main__":
    main()
