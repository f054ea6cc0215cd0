#!/usr/bin/env python3
"""Reads Avro object container files with readers that are not kingest's, for the specs.

    avro_read.py FILE...

Each FILE is read by fastavro, by avrocat (avro-c) and by avro-tools' tojson (Java; the jar is fetched with
Maven into $KINGEST_AVRO_TOOLS_DIR, default /tmp/kingest-avro-tools, on first use); the three must agree on
every record, or the script exits 1 naming the file and the reader. Prints, for each FILE, one JSON line {"file": FILE, "schema": <the header's avro.schema text>, "codec": <its
avro.codec>, "count": N}, then its records, one JSON line each, in file order. Bytes and fixed values are
printed as strings of code points 0-255 (latin-1), the way Avro's JSON encoding writes them. Exits 1 naming the
file when one cannot be read."""
import datetime
import decimal
import fcntl
import json
import os
import subprocess
import sys
import uuid

AVRO_TOOLS_VERSION = "1.11.3"

import fastavro


def plain(value):
    if isinstance(value, datetime.datetime):  # timestamp-millis: back to the long that was written
        return round(value.timestamp() * 1000)
    if isinstance(value, (datetime.date, datetime.time, decimal.Decimal, uuid.UUID)):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def untagged(value):
    """A value as avrocat and avro-tools print it, with each union's branch tag ({"string": "x"}) taken off."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key, inner), = value.items()
            if key in ("string", "long", "int", "bytes", "double", "float", "boolean", "array", "map") or "." in key \
                    or key[:1].isupper():
                return untagged(inner)
        return {k: untagged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untagged(v) for v in value]
    return value


def same(a, b):
    """Equal, floats compared as floats (readers print them with different digits)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 1e-6 * max(1, abs(a))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def avro_tools_jar():
    folder = os.environ.get("KINGEST_AVRO_TOOLS_DIR", "/tmp/kingest-avro-tools")
    jar = os.path.join(folder, "avro-tools-%s.jar" % AVRO_TOOLS_VERSION)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(jar):
            got = subprocess.run(["mvn", "-B", "-q", "dependency:copy",
                                  "-Dartifact=org.apache.avro:avro-tools:" + AVRO_TOOLS_VERSION,
                                  "-DoutputDirectory=" + folder], capture_output=True, text=True)
            if got.returncode != 0 or not os.path.exists(jar):
                sys.exit("avro_read: Maven could not fetch avro-tools %s: %s" % (AVRO_TOOLS_VERSION, got.stdout[-2000:]))
    return jar


def other_readers(path, records):
    """Exits naming the reader when avrocat or avro-tools reads PATH differently from fastavro's RECORDS."""
    java = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", avro_tools_jar(), "tojson"]
    for name, cmd in (("avrocat", ["avrocat", path]), ("avro-tools tojson", java + [path])):
        got = subprocess.run(cmd, capture_output=True, text=True)
        if got.returncode != 0:
            sys.exit("avro_read: %s cannot read %s: %s" % (name, path, got.stderr[-2000:]))
        theirs = [untagged(json.loads(line)) for line in got.stdout.splitlines() if line.strip()]
        if len(theirs) != len(records):
            sys.exit("avro_read: %s reads %d records in %s, fastavro %d" % (name, len(theirs), path, len(records)))
        for i, (a, b) in enumerate(zip(records, theirs)):
            if not same(a, b):
                sys.exit("avro_read: record %d of %s: fastavro reads %s, %s %s" % (i, path, a, name, b))


def main():
    for path in sys.argv[1:]:
        try:
            with open(path, "rb") as f:
                reader = fastavro.reader(f)
                meta = reader.metadata
                records = [plain(r) for r in reader]
        except Exception as e:  # any failure to read is the spec's failure, named
            sys.exit("avro_read: %s: %s" % (path, e))
        other_readers(path, records)
        print(json.dumps({"file": path, "schema": meta.get("avro.schema"), "codec": meta.get("avro.codec", "null"),
                          "count": len(records)}))
        for r in records:
            print(json.dumps(r, sort_keys=True))


if __name__ == "__main__":
    main()
