"""`sprig consumer-offsets`: decode `__consumer_offsets` records, and sample consumer lag into
a topic for the `consumer_offsets` table."""

from __future__ import annotations

import argparse
import signal
import sys
import threading


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "consumer-offsets",
        help="decode __consumer_offsets records; sample consumer lag into a topic",
        description="Tools for the consumer-lag history: decode Kafka's __consumer_offsets "
        "records to JSON, or poll a cluster's groups and produce lag samples to a topic.",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    decode = actions.add_parser(
        "decode",
        help="KEY_HEX VALUE_HEX lines on stdin -> one JSON object per line",
        description="Reads one record per line, 'KEY_HEX VALUE_HEX' (no value: a tombstone), and "
        "prints each as JSON. Offset commits print the seed format {topic, partition, group, "
        "version, offset, [leaderEpoch,] metadata, commitTimestamp, expireTimestamp}. Record "
        "types it does not know are skipped and counted on stderr.",
    )
    decode.set_defaults(func=run_decode)

    sample = actions.add_parser(
        "sample",
        help="poll the groups' commits and end offsets; produce lag samples as JSON",
        description="Every interval, lists the consumer groups, reads their commits and the end "
        "offsets through the AdminClient, and produces one JSON record per group and partition "
        "(with logEndOffset and lag) to a topic. For clusters whose __consumer_offsets cannot be "
        "read. Stops on Ctrl-C or SIGTERM.",
    )
    sample.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    sample.add_argument("--topic", default=None, help="topic to produce to "
                        "(default consumer_offsets_json)")  # fmt: skip
    sample.add_argument("--groups", default="*", metavar="GLOB",
                        help="only groups matching this glob (default: all)")  # fmt: skip
    sample.add_argument("--interval", type=float, default=30.0, metavar="SECONDS",
                        help="seconds between rounds (default 30)")  # fmt: skip
    sample.add_argument("--once", action="store_true", help="one round, then exit")
    sample.set_defaults(func=run_sample)


def run_decode(args: argparse.Namespace) -> int:
    import orjson

    from monitoring.consumer_offsets import ConsumerOffsetsDecoder
    from monitoring.errors import OffsetsDecodeError
    from sprig.errors import CommandError

    decoder = ConsumerOffsetsDecoder()
    out = sys.stdout
    for number, line in enumerate(sys.stdin, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) > 2:
            raise CommandError(f"line {number}: expected 'KEY_HEX [VALUE_HEX]', got {len(fields)} "
                               "fields")  # fmt: skip
        try:
            key = bytes.fromhex(fields[0])
            value = bytes.fromhex(fields[1]) if len(fields) == 2 else None
        except ValueError:
            raise CommandError(f"line {number}: not hexadecimal: {line.strip()!r}") from None
        try:
            record = decoder.decode(key, value)
        except OffsetsDecodeError as exc:
            raise CommandError(f"line {number}: {exc}") from exc
        if record is not None:
            out.write(orjson.dumps(record.to_json()).decode() + "\n")
    if decoder.stats.skipped:
        counts = ", ".join(f"{reason} x{n}" for reason, n in sorted(decoder.stats.skipped.items()))
        print(f"skipped {decoder.stats.skipped_total} record(s): {counts}", file=sys.stderr)
    return 0


def run_sample(args: argparse.Namespace) -> int:
    from monitoring.errors import KafkaUnavailableError
    from monitoring.kafka_admin import KafkaGroupReader
    from monitoring.sampler import LagSampler
    from monitoring.tables import DEFAULT_TOPIC
    from sprig.errors import CommandError

    if args.interval <= 0:
        raise CommandError(f"--interval must be a positive number of seconds, got {args.interval}")
    reader = KafkaGroupReader(args.bootstrap_server, config={"log_level": 2})
    sampler = LagSampler(reader, args.topic or DEFAULT_TOPIC, args.groups)
    if args.once:
        try:
            count = sampler.publish(sampler.poll_once())
        except KafkaUnavailableError as exc:
            raise CommandError(str(exc)) from exc
        print(f"produced {count} lag sample(s) to {sampler.topic}")
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    sampler.run(args.interval, stop)
    return 0
