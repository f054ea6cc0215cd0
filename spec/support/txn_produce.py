#!/usr/bin/env python3
"""Produces to one partition inside Kafka transactions, for the specs: first ABORTED records in a
transaction that is aborted, then COMMITTED records in one that commits.

    txn_produce.py BROKERS TOPIC ABORTED COMMITTED [PREFIX]

Record payloads are PREFIX-aborted-<i> and PREFIX-committed-<i>. Needs Python's confluent-kafka.
"""
import sys

from confluent_kafka import Producer


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    brokers, topic, aborted, committed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    prefix = sys.argv[5] if len(sys.argv) == 6 else topic
    p = Producer({"bootstrap.servers": brokers, "transactional.id": "kingest-spec-" + topic,
                  "linger.ms": 20, "batch.num.messages": 10000})
    p.init_transactions(30)
    for kind, n, finish in (("aborted", aborted, p.abort_transaction), ("committed", committed, p.commit_transaction)):
        if n == 0:
            continue
        p.begin_transaction()
        for i in range(n):
            while True:
                try:
                    p.produce(topic, ("%s-%s-%d" % (prefix, kind, i)).encode(), partition=0)
                    break
                except BufferError:
                    p.poll(0.1)
        p.flush(60)
        finish(60)


if __name__ == "__main__":
    main()
