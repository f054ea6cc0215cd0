#!/usr/bin/env python3
"""kafka_admin.py: the topic administration of scripts/kafka through Kafka's admin protocol (Python's
confluent-kafka), in a tenth of the time of a Kafka-tools JVM per call.

    kafka_admin.py BOOTSTRAP create TOPIC PARTITIONS [KEY=VALUE...]
    kafka_admin.py BOOTSTRAP add-partitions TOPIC PARTITIONS
    kafka_admin.py BOOTSTRAP delete TOPIC
    kafka_admin.py BOOTSTRAP delete-records TOPIC PARTITION OFFSET   (OFFSET -1: the latest)
    kafka_admin.py BOOTSTRAP offsets TOPIC   ("TOPIC:PARTITION EARLIEST LATEST" lines, by partition)
    kafka_admin.py serve SOCKET BOOTSTRAP [PID]

create and add-partitions return once every partition has a leader, delete once the topic is no longer listed,
delete-records once the log start offset is where it was asked to be. Errors go to stderr with exit status 1.

serve keeps one admin client of BOOTSTRAP and answers HTTP on the Unix socket SOCKET, so that a command costs a
curl instead of a Python start and a connection: POST /BOOTSTRAP with the command and its arguments as the body,
one per line; the answer is 200 with what the command prints, or 422 with its error. A request for another
BOOTSTRAP gets 421 (the caller asks without the server). With PID (the broker's), the server ends once that
process is gone or SOCKET was removed.
"""
import io
import os
import sys
import time

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic, OffsetSpec

TIMEOUT = 30.0


class Failure(Exception):
    """What a command could not do, as its one-line error."""


def fail(msg):
    raise Failure(msg)


def wait_for(what, predicate):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    fail("%s after %.0fs" % (what, TIMEOUT))


def led(admin, topic):
    """Partitions of TOPIC that have a leader (0 when the topic is missing)."""
    md = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
    if md is None or md.error is not None:
        return 0
    return sum(1 for p in md.partitions.values() if p.leader >= 0 and p.error is None)


def result(futures, what):
    for _, f in futures.items():
        try:
            f.result()
        except Exception as e:  # the broker's answer, e.g. TOPIC_ALREADY_EXISTS
            fail("%s: %s" % (what, e.args[0].str() if e.args and hasattr(e.args[0], "str") else e))


def partitions_of(admin, topic):
    md = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
    if md is None or md.error is not None or not md.partitions:
        fail("topic %s does not exist" % topic)
    return sorted(md.partitions)


def watermarks(admin, topic, parts):
    """{partition: (earliest, latest)} of TOPIC's PARTS."""
    ends = []
    for spec in (OffsetSpec.earliest(), OffsetSpec.latest()):
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in parts}, request_timeout=10)
        try:
            ends.append({tp.partition: f.result().offset for tp, f in futures.items()})
        except Exception as e:
            fail("could not read the offsets of %s: %s" % (topic, e))
    return {p: (ends[0][p], ends[1][p]) for p in parts}


def new_admin(bootstrap):
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def run(admin, cmd, args, out):
    """Runs CMD with ARGS, writing what it prints to OUT; raises Failure."""
    if cmd == "create" and len(args) >= 2:
        topic, n = args[0], int(args[1])
        config = dict(kv.split("=", 1) for kv in args[2:])
        result(admin.create_topics([NewTopic(topic, n, 1, config=config)], operation_timeout=TIMEOUT),
               "creating topic %s" % topic)
        wait_for("topic %s: not all %d partitions have a leader" % (topic, n), lambda: led(admin, topic) == n)
        out.write("Created topic %s.\n" % topic)
    elif cmd == "add-partitions" and len(args) == 2:
        topic, n = args[0], int(args[1])
        partitions_of(admin, topic)
        result(admin.create_partitions([NewPartitions(topic, n)], operation_timeout=TIMEOUT),
               "adding partitions to topic %s" % topic)
        wait_for("topic %s: not all %d partitions have a leader" % (topic, n), lambda: led(admin, topic) == n)
    elif cmd == "delete" and len(args) == 1:
        topic = args[0]
        result(admin.delete_topics([topic], operation_timeout=TIMEOUT), "deleting topic %s" % topic)
        wait_for("topic %s still listed" % topic,
                 lambda: topic not in admin.list_topics(timeout=10).topics)
    elif cmd == "delete-records" and len(args) == 3:
        topic, part, offset = args[0], int(args[1]), int(args[2])
        if part not in partitions_of(admin, topic):
            fail("topic %s has no partition %d" % (topic, part))
        low, high = watermarks(admin, topic, [part])[part]
        want = high if offset == -1 else offset
        # OFFSET_END (-1) asks the broker for the high watermark itself.
        futures = admin.delete_records([TopicPartition(topic, part, offset)], operation_timeout=TIMEOUT)
        result(futures, "deleting records of %s-%d" % (topic, part))
        low, _ = watermarks(admin, topic, [part])[part]
        if low != want:
            fail("log start offset of %s-%d is %d, expected %d" % (topic, part, low, want))
    elif cmd == "offsets" and len(args) == 1:
        topic = args[0]
        marks = watermarks(admin, topic, partitions_of(admin, topic))
        for p in sorted(marks):
            out.write("%s:%d %d %d\n" % (topic, p, marks[p][0], marks[p][1]))
    else:
        fail("unknown command or arguments: %s" % " ".join([cmd] + list(args)))


def serve(sock_path, bootstrap, broker_pid=None):
    import http.server
    import socketserver
    import threading

    admin = new_admin(bootstrap)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            args = body.split("\n")
            if args and args[-1] == "":
                args.pop()
            out = io.StringIO()
            if self.path != "/" + bootstrap:
                code, text = 421, "this server speaks to %s" % bootstrap
            elif not args:
                code, text = 422, "no command"
            else:
                try:
                    run(admin, args[0], args[1:], out)
                    code, text = 200, out.getvalue()
                except Failure as e:
                    code, text = 422, str(e)
                except Exception as e:  # the client's own, e.g. a metadata request that timed out
                    code, text = 422, "%s: %s" % (args[0], e)
            data = text.encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_):
            pass

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    if os.path.exists(sock_path):
        os.unlink(sock_path)
    server = Server(sock_path, Handler)
    ino = os.stat(sock_path).st_ino

    def watch():
        while True:
            time.sleep(1)
            try:
                if broker_pid:
                    os.kill(broker_pid, 0)
                if os.stat(sock_path).st_ino != ino:
                    break
            except OSError:
                break
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    sys.stdout.write("kafka_admin: serving %s on %s\n" % (bootstrap, sock_path))
    sys.stdout.flush()
    server.serve_forever()


def main(argv):
    if len(argv) in (4, 5) and argv[1] == "serve":
        serve(argv[2], argv[3], int(argv[4]) if len(argv) == 5 else None)
        return
    if len(argv) < 3:
        fail("usage: kafka_admin.py BOOTSTRAP COMMAND ARGS...")
    run(new_admin(argv[1]), argv[2], argv[3:], sys.stdout)


if __name__ == "__main__":
    code = 0
    try:
        main(sys.argv)
    except Failure as e:
        sys.stderr.write("kafka_admin: %s\n" % e)
        code = 1
    sys.stdout.flush()
    # The client's orderly teardown costs half a second and there is nothing left to tear down for.
    os._exit(code)
