#!/usr/bin/env python3
"""Reads Parquet files with readers that are not kingest's, for the specs.

    parquet_read.py FILE...

Each FILE is read by pyarrow, by duckdb and, when it is installed, by fastparquet; they must agree on every value
of every row, or the script exits 1 naming the file and the reader. Prints, for each FILE, one JSON line
{"file": FILE, "created_by": ..., "avro_schema": <the footer's parquet.avro.schema>, "codecs": [each column
chunk's codec, once each], "row_groups": N, "rows": N, "columns": {name: {"type": <physical type>,
"logical": <its logical type>, "optional": bool}}, "stats": {column: {"min": ..., "max": ..., "nulls": N}}} (the
statistics over all row groups, pyarrow's), then its rows, one JSON line each, in file order. Bytes, fixed and enum
values are printed as strings of code points 0-255 (latin-1), as avro_read.py prints Avro's bytes."""
import json
import math
import sys

import duckdb
import pyarrow.parquet as pq

try:
    import fastparquet
    import pandas
except ImportError:
    fastparquet = None


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def fail(path, why):
    sys.exit("parquet_read: %s: %s" % (path, why))


def read(path):
    f = pq.ParquetFile(path)
    md = f.metadata
    table = f.read()
    names = table.column_names
    rows = [{k: plain(v) for k, v in r.items()} for r in table.to_pylist()]
    # duckdb: the same rows, in file order.
    con = duckdb.connect()
    got = con.execute("SELECT * FROM read_parquet(?)", [path]).fetchall()
    if len(got) != len(rows):
        fail(path, "duckdb reads %d rows, pyarrow %d" % (len(got), len(rows)))
    for i, r in enumerate(got):
        for k, v in zip(names, r):
            if not same(plain(v), rows[i][k]):
                fail(path, "duckdb reads %r at row %d column %s, pyarrow %r" % (v, i, k, rows[i][k]))
    if fastparquet is not None:
        df = fastparquet.ParquetFile(path).to_pandas()
        if len(df) != len(rows):
            fail(path, "fastparquet reads %d rows, pyarrow %d" % (len(df), len(rows)))
        for k in names:
            for i, v in enumerate(df[k].tolist()):
                if v is None or v is pandas.NA or (isinstance(v, float) and math.isnan(v) and rows[i][k] is None):
                    v = None
                elif hasattr(v, "item"):  # numpy scalars
                    v = v.item()
                col = md.schema.column(names.index(k))
                if isinstance(v, (bytes, bytearray)) and col.physical_type == "FIXED_LEN_BYTE_ARRAY":
                    v = bytes(v).ljust(col.length, b"\0")  # numpy's fixed strings drop trailing NULs
                v = plain(v)
                if isinstance(rows[i][k], bool) or isinstance(v, bool):
                    v = bool(v) if v is not None else None
                if not same(v, rows[i][k]):
                    fail(path, "fastparquet reads %r at row %d column %s, pyarrow %r" % (v, i, k, rows[i][k]))
    codecs, stats = [], {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            if col.compression not in codecs:
                codecs.append(col.compression)
            s = col.statistics
            name = col.path_in_schema
            cur = stats.setdefault(name, {"min": None, "max": None, "nulls": 0, "has_min_max": True})
            cur["nulls"] += s.null_count if s is not None else 0
            if s is None or not s.has_min_max:
                cur["has_min_max"] = False
                continue
            lo, hi = plain(s.min), plain(s.max)
            cur["min"] = lo if cur["min"] is None or lo < cur["min"] else cur["min"]
            cur["max"] = hi if cur["max"] is None or hi > cur["max"] else cur["max"]
    columns = {}
    for i in range(len(md.schema)):
        c = md.schema.column(i)
        columns[c.name] = {"type": c.physical_type, "logical": str(c.logical_type), "optional": c.max_definition_level > 0}
    kv = md.metadata or {}
    print(json.dumps({
        "file": path,
        "created_by": md.created_by,
        "avro_schema": kv.get(b"parquet.avro.schema", b"").decode("utf-8"),
        "codecs": codecs,
        "row_groups": md.num_row_groups,
        "rows": md.num_rows,
        "columns": columns,
        "stats": stats,
    }))
    for r in rows:
        print(json.dumps(r, sort_keys=True))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        try:
            read(path)
        except SystemExit:
            raise
        except Exception as e:  # a reader that cannot read the file: say which file, and why
            fail(path, "%s: %s" % (type(e).__name__, e))


if __name__ == "__main__":
    main()
