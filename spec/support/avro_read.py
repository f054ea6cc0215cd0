#!/usr/bin/env python3
"""Reads Avro object container files with fastavro (not kingest's code) for the specs.

    avro_read.py FILE...

Prints, for each FILE, one JSON line {"file": FILE, "schema": <the header's avro.schema text>, "codec": <its
avro.codec>, "count": N}, then its records, one JSON line each, in file order. Bytes and fixed values are
printed as strings of code points 0-255 (latin-1), the way Avro's JSON encoding writes them. Exits 1 naming the
file when one cannot be read."""
import datetime
import decimal
import json
import sys
import uuid

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


def main():
    for path in sys.argv[1:]:
        try:
            with open(path, "rb") as f:
                reader = fastavro.reader(f)
                meta = reader.metadata
                records = [plain(r) for r in reader]
        except Exception as e:  # any failure to read is the spec's failure, named
            sys.exit("avro_read: %s: %s" % (path, e))
        print(json.dumps({"file": path, "schema": meta.get("avro.schema"), "codec": meta.get("avro.codec", "null"),
                          "count": len(records)}))
        for r in records:
            print(json.dumps(r, sort_keys=True))


if __name__ == "__main__":
    main()
