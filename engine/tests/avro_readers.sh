#!/usr/bin/env bash
# avro_readers.sh: Avro files written by kingest's Avro writer (avro_sample), one per codec, read by three
# readers that are not kingest's: Debian's avrocat (avro-c), Python's fastavro (with cramjam for snappy) and
# Java's avro-tools (getmeta, count, tojson). Each must read every record, equal to what was written, and
# avro-tools' getmeta and fastavro must show the schema's text byte for byte (doc, aliases, logicalType,
# defaults kept).
#
#   avro_readers.sh AVRO_SAMPLE WORK_DIR AVRO_TOOLS_DIR
#
# The avro-tools jar is fetched with Maven into AVRO_TOOLS_DIR when it is not there yet.
set -euo pipefail

SAMPLE=$1 WORK=$2 TOOLS_DIR=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AVRO_TOOLS_VERSION=1.11.3
JAR=$TOOLS_DIR/avro-tools-$AVRO_TOOLS_VERSION.jar

fail() {
    echo "avro_readers: $*" >&2
    exit 1
}
for c in avrocat python3 java mvn; do command -v "$c" >/dev/null || fail "'$c' not found in PATH (scripts/setup)"; done
python3 -c 'import fastavro, cramjam' 2>/dev/null || fail "Python's fastavro and cramjam are missing (scripts/setup)"

if [[ ! -f $JAR ]]; then
    mkdir -p "$TOOLS_DIR"
    out=$(mvn -B -q dependency:copy -Dartifact=org.apache.avro:avro-tools:$AVRO_TOOLS_VERSION \
        -DoutputDirectory="$TOOLS_DIR" 2>&1) || {
        sed 's/\x1b\[[0-9;]*m//g' <<<"$out" >&2
        fail "Maven could not fetch org.apache.avro:avro-tools:$AVRO_TOOLS_VERSION"
    }
fi
avro_tools() { java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -jar "$JAR" "$@" 2>"$WORK/avro-tools.err"; }

rm -rf "$WORK"
mkdir -p "$WORK"
"$SAMPLE" "$WORK"
expected=$(wc -l <"$WORK/expected.jsonl")
((expected > 100)) || fail "the sample holds $expected records"

for codec in null deflate snappy; do
    file=$WORK/$codec.avro
    # avrocat (avro-c)
    avrocat "$file" >"$WORK/$codec.avrocat.jsonl" || fail "avrocat could not read $file"
    python3 "$HERE/avro_readers.py" expected "$WORK" avrocat "$file" "$WORK/$codec.avrocat.jsonl"
    # fastavro
    python3 "$HERE/avro_readers.py" expected "$WORK" fastavro "$file"
    # avro-tools: the header's metadata, the count, the records
    avro_tools getmeta "$file" >"$WORK/$codec.meta" || fail "avro-tools getmeta $file: $(cat "$WORK/avro-tools.err")"
    python3 - "$WORK/$codec.meta" "$WORK/schema.avsc" "$codec" <<'PY' || fail "avro-tools getmeta $file: see above"
import sys
meta, schema, codec = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
if "avro.schema\t" + schema + "\n" not in meta:
    sys.exit("the schema's text is not in getmeta's output byte for byte:\n" + meta)
if "avro.codec\t" + codec + "\n" not in meta:
    sys.exit("avro.codec is not " + codec + ":\n" + meta)
PY
    count=$(avro_tools count "$file") || fail "avro-tools count $file: $(cat "$WORK/avro-tools.err")"
    [[ $count == "$expected" ]] || fail "avro-tools count $file: $count, expected $expected"
    avro_tools tojson "$file" >"$WORK/$codec.tools.jsonl" || fail "avro-tools tojson $file: $(cat "$WORK/avro-tools.err")"
    python3 "$HERE/avro_readers.py" expected "$WORK" avro-tools "$file" "$WORK/$codec.tools.jsonl"
    echo "$file: avro-tools getmeta shows the schema byte for byte, count $count"
done
