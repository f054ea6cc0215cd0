"""avro_readers.py: checks Avro files that kingest wrote with readers that are not kingest's.

    avro_readers.py expected FOLDER READER FILE [OUTPUT]

READER is fastavro (reads FILE itself), or avrocat or avro-tools (OUTPUT holds what their record dump printed,
one JSON record a line). The records must equal FOLDER/expected.jsonl. For fastavro, the file's schema must
also be FOLDER/schema.avsc byte for byte, and the timestamp-millis field must come back as a datetime (the
logicalType reached the reader)."""
import datetime
import json
import sys


def plain(value):
    """A union's value as avrocat and avro-tools print it ({"string": "x"}) made plain ("x")."""
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        if key in ("string", "long", "int", "bytes", "double", "float", "boolean"):
            return inner
    return value


def normal(record):
    out = {}
    for key, value in record.items():
        if isinstance(value, datetime.datetime):
            value = round(value.timestamp() * 1000)
        out[key] = plain(value)
    return out


def main():
    _, _, folder, reader, path = sys.argv[:5]
    with open(folder + "/expected.jsonl") as f:
        expected = [json.loads(line) for line in f]
    if reader == "fastavro":
        import fastavro
        with open(path, "rb") as f:
            avro = fastavro.reader(f)
            schema_text = avro.metadata["avro.schema"]
            with open(folder + "/schema.avsc") as s:
                if schema_text != s.read():
                    sys.exit(f"{path}: fastavro: the header's schema differs from the one written")
            records = list(avro)
        if records and not isinstance(records[0]["at"], datetime.datetime):
            sys.exit(f"{path}: fastavro: the timestamp-millis field did not come back as a datetime")
    else:
        with open(sys.argv[5]) as f:
            records = [json.loads(line) for line in f if line.strip()]
    records = [normal(r) for r in records]
    if len(records) != len(expected):
        sys.exit(f"{path}: {reader} read {len(records)} records, expected {len(expected)}")
    for i, (got, want) in enumerate(zip(records, expected)):
        if got != want:
            sys.exit(f"{path}: {reader}: record {i} is {str(got)[:200]}, expected {str(want)[:200]}")
    print(f"{path}: {reader} read {len(records)} records")


main()
