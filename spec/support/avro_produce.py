#!/usr/bin/env python3
"""Registers Avro schemas in the schema registry of scripts/registry and produces Avro records framed the way
Gobblin's decoders read them, for the specs.

    avro_produce.py register FORMAT URL TOPIC SCHEMA
        Registers SCHEMA (a file holding the schema's JSON) as TOPIC's latest schema and prints its id: a
        number (confluent) or 32 hex digits (linkedin).
    avro_produce.py produce FORMAT BROKERS URL TOPIC SCHEMA [--partition N] [--schema-id ID]
        Registers SCHEMA as above, then produces one record per stdin line (a JSON object, encoded with
        SCHEMA) and waits until all are acknowledged. --schema-id frames the records with ID instead and
        registers nothing (a schema id the registry does not know).
    avro_produce.py raw BROKERS TOPIC
        Produces one record per stdin line, the line's hex digits as the payload's bytes (payloads that are
        not well framed, for the bad-input specs).
    In both, a line "null" produces a record with a null payload (a tombstone: a deleted record).

FORMAT and URL (what a job gives as kafka.schema.registry.url):
    confluent  byte 0, the schema id as 4 big-endian bytes, the Avro binary encoding. URL is Confluent's
               API (<registry>/apis/ccompat/v7); the schema goes to subject TOPIC-value.
    linkedin   byte 0, the 16-byte MD5 of the schema's text, the Avro binary encoding (Gobblin's
               KafkaAvroSchemaRegistry). URL is <registry>/apis/registry/v2/groups/<group>/artifacts of the
               registry's v2 API, which then serves Gobblin's paths: the schema is stored as artifact
               id=<md5 hex> and as a new version of artifact latest_with_type=<TOPIC>.

The schema's text is its JSON written compactly with the keys in the file's order, which is how Avro's Java
Schema.toString() writes a schema whose file lists the keys in Avro's order (type, name, namespace, doc,
fields; name, type, default for a field): Gobblin's MD5 id is taken over that text. Needs Python's
confluent-kafka and fastavro.
"""
import argparse
import hashlib
import io
import json
import struct
import sys
import urllib.error
import urllib.request

import fastavro
from confluent_kafka import Producer


def http(method, url, body, headers):
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit("avro_produce: %s %s: HTTP %d: %s" % (method, url, e.code, e.read().decode(errors="replace")))


def schema_text(path):
    with open(path, encoding="utf-8") as f:
        return json.dumps(json.load(f), separators=(",", ":"), ensure_ascii=False)


def register(fmt, url, topic, text):
    """Registers TEXT as TOPIC's latest schema; returns the id as the frame carries it (bytes) and as printed."""
    url = url.rstrip("/")
    if fmt == "confluent":
        got = http("POST", "%s/subjects/%s-value/versions" % (url, topic), json.dumps({"schema": text}).encode(),
                   {"Content-Type": "application/vnd.schemaregistry.v1+json"})
        return struct.pack(">i", got["id"]), str(got["id"])
    md5 = hashlib.md5(text.encode("utf-8"))
    for artifact, if_exists in (("id=" + md5.hexdigest(), "RETURN"), ("latest_with_type=" + topic, "UPDATE")):
        http("POST", url + "?ifExists=" + if_exists, text.encode("utf-8"),
             {"Content-Type": "application/json", "X-Registry-ArtifactId": artifact,
              "X-Registry-ArtifactType": "AVRO"})
    return md5.digest(), md5.hexdigest()


def parse_id(fmt, text):
    if fmt == "confluent":
        return struct.pack(">i", int(text))
    raw = bytes.fromhex(text)
    if len(raw) != 16:
        sys.exit("avro_produce: a linkedin schema id is 32 hex digits, not %r" % text)
    return raw


def produce(args):
    text = schema_text(args.schema)
    schema = fastavro.parse_schema(json.loads(text))
    if args.schema_id is not None:
        frame_id = parse_id(args.format, args.schema_id)
    else:
        frame_id, _ = register(args.format, args.url, args.topic, text)
    p = Producer({"bootstrap.servers": args.brokers, "linger.ms": 20, "message.timeout.ms": 30000})
    failed = []
    kw = {} if args.partition is None else {"partition": args.partition}
    for line in sys.stdin:
        if not line.strip():
            continue
        value = None
        if line.strip() != "null":
            buf = io.BytesIO()
            buf.write(b"\0" + frame_id)
            fastavro.schemaless_writer(buf, schema, json.loads(line))
            value = buf.getvalue()
        while True:
            try:
                p.produce(args.topic, value, on_delivery=lambda err, _: err and failed.append(err), **kw)
                break
            except BufferError:
                p.poll(0.1)
    if p.flush(60) or failed:
        sys.exit("avro_produce: producing to %s failed: %s" % (args.topic, failed[:1] or "timed out"))


def raw(args):
    p = Producer({"bootstrap.servers": args.brokers, "linger.ms": 20, "message.timeout.ms": 30000})
    failed = []
    for line in sys.stdin:
        line = line.strip()
        value = None if line == "null" else bytes.fromhex(line)
        p.produce(args.topic, value, on_delivery=lambda err, _: err and failed.append(err))
    if p.flush(60) or failed:
        sys.exit("avro_produce: producing to %s failed: %s" % (args.topic, failed[:1] or "timed out"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("register")
    r.add_argument("format", choices=("confluent", "linkedin"))
    r.add_argument("url")
    r.add_argument("topic")
    r.add_argument("schema")
    pr = sub.add_parser("produce")
    pr.add_argument("format", choices=("confluent", "linkedin"))
    pr.add_argument("brokers")
    pr.add_argument("url")
    pr.add_argument("topic")
    pr.add_argument("schema")
    pr.add_argument("--partition", type=int)
    pr.add_argument("--schema-id")
    rw = sub.add_parser("raw")
    rw.add_argument("brokers")
    rw.add_argument("topic")
    args = ap.parse_args()
    if args.command == "raw":
        raw(args)
    elif args.command == "register":
        print(register(args.format, args.url, args.topic, schema_text(args.schema))[1])
    else:
        produce(args)


if __name__ == "__main__":
    main()
