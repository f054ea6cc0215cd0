#!/usr/bin/env python3
"""The specs' independent S3 client (boto3), against the server of scripts/s3 (KINGEST_S3_DIR), or against
S3_ENDPOINT with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY when set (moto).

  s3_tool.py mkbucket BUCKET            create the bucket
  s3_tool.py objects BUCKET PREFIX      every object under PREFIX as JSON lines: {"key", "size", "etag"}
  s3_tool.py get BUCKET KEY             the object's bytes on stdout
  s3_tool.py put BUCKET KEY             stdin as the object
  s3_tool.py uploads BUCKET PREFIX      the unfinished multipart uploads under PREFIX as JSON lines: {"key", "id"}
  s3_tool.py begin BUCKET KEY           begin a multipart upload, print its id
  s3_tool.py dump BUCKET PREFIX         every object under PREFIX as JSON lines: {"key", "size", "body"} (text)
  s3_tool.py count BUCKET PREFIX        the number of lines in the objects under PREFIX
  s3_tool.py records BUCKET PREFIX      the records of every object under PREFIX, one JSON line per object:
                                        {"key", "records"}: text lines (gzip undone) or Avro records (fastavro)
"""
import json
import os
import sys

import boto3
from botocore.config import Config


def client():
    endpoint = os.environ.get("S3_ENDPOINT")
    if endpoint:
        key, secret = os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
    else:
        state = os.environ.get("KINGEST_S3_DIR") or os.path.join(os.environ.get("KINGEST_ROOT", "."), ".s3")
        endpoint = open(os.path.join(state, "url")).read().strip()
        key = open(os.path.join(state, "access-key")).read().strip()
        secret = open(os.path.join(state, "secret-key")).read().strip()
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                               retries={"max_attempts": 3}))


def main(argv):
    s3 = client()
    cmd, bucket = argv[1], argv[2]
    if cmd == "mkbucket":
        s3.create_bucket(Bucket=bucket)
    elif cmd == "objects":
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=argv[3]):
            for o in page.get("Contents", []):
                print(json.dumps({"key": o["Key"], "size": o["Size"], "etag": o["ETag"].strip('"')}))
    elif cmd == "get":
        sys.stdout.buffer.write(s3.get_object(Bucket=bucket, Key=argv[3])["Body"].read())
    elif cmd == "put":
        s3.put_object(Bucket=bucket, Key=argv[3], Body=sys.stdin.buffer.read())
    elif cmd == "uploads":
        for u in s3.list_multipart_uploads(Bucket=bucket, Prefix=argv[3]).get("Uploads", []):
            print(json.dumps({"key": u["Key"], "id": u["UploadId"]}))
    elif cmd == "dump":
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=argv[3]):
            for o in page.get("Contents", []):
                body = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
                print(json.dumps({"key": o["Key"], "size": o["Size"], "body": body.decode("utf-8", "replace")}))
    elif cmd == "count":
        lines = 0
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=argv[3]):
            for o in page.get("Contents", []):
                for chunk in s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].iter_chunks(1 << 20):
                    lines += chunk.count(b"\n")
        print(lines)
    elif cmd == "records":
        import gzip
        import io
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=argv[3]):
            for o in page.get("Contents", []):
                data = s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
                if o["Key"].endswith(".avro"):
                    import fastavro
                    records = list(fastavro.reader(io.BytesIO(data)))
                else:
                    if o["Key"].endswith(".gz"):
                        data = gzip.decompress(data)
                    records = data.decode().splitlines()
                print(json.dumps({"key": o["Key"], "records": records}))
    elif cmd == "begin":
        print(s3.create_multipart_upload(Bucket=bucket, Key=argv[3])["UploadId"])
    else:
        sys.exit("s3_tool.py: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
