"""`sprig consumer-offsets`: decode `__consumer_offsets` records, and sample consumer lag into
a topic for the `consumer_offsets` table."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time


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
    _topic_argument(sample, "topic to produce to")
    sample.add_argument("--groups", default="*", metavar="GLOB",
                        help="only groups matching this glob (default: all)")  # fmt: skip
    sample.add_argument("--interval", type=float, default=30.0, metavar="SECONDS",
                        help="seconds between rounds (default 30)")  # fmt: skip
    sample.add_argument("--once", action="store_true", help="one round, then exit")
    sample.set_defaults(func=run_sample)

    stream = actions.add_parser(
        "stream",
        help="consume __consumer_offsets (or a topic of its bytes); produce the commits as JSON",
        description="Consumes Kafka's __consumer_offsets (every partition; or any topic holding "
        "those records), decodes them and produces each offset commit as JSON to a topic "
        "(consumer_offsets_json by default), and each offset tombstone as a row with a null "
        "offset. Skips its own group's commits; counts group metadata, the new consumer "
        "protocol's records and undecodable records by reason. Each batch and its input "
        "offsets are one Kafka transaction, so a crash or restart neither loses nor "
        "duplicates output. Stops on Ctrl-C or SIGTERM.",
    )
    stream.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    stream.add_argument("--input-topic", default="__consumer_offsets")
    _topic_argument(stream, "topic to produce to")
    stream.add_argument("--output-bootstrap-server", default=None, metavar="HOST:PORT",
                        help="cluster to produce to (default: the input's)")  # fmt: skip
    stream.add_argument("--group", default="sprig-consumer-offsets-stream",
                        help="consumer group that stores the input offsets")  # fmt: skip
    stream.add_argument("--batch", type=int, default=500,
                        help="records per transaction (default 500)")  # fmt: skip
    stream.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="serve the job's Prometheus counters (records produced, records "
                        "skipped by reason) at http://0.0.0.0:PORT/metrics")  # fmt: skip
    stream.add_argument(
        "--until-idle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="exit after SECONDS with no input (default: run until stopped)",
    )
    stream.set_defaults(func=run_stream)

    init = actions.add_parser(
        "init",
        help="create the consumer_offsets REALTIME table (and its topic) on a cluster",
        description="Creates the topic, then the shipped consumer_offsets schema and REALTIME "
        "table config through the controller's REST API, the stream reading the topic from the "
        "given Kafka cluster. Says so and changes nothing when the table exists.",
    )
    init.add_argument("--controller", default="http://127.0.0.1:9000", metavar="URL")
    init.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    _topic_argument(init, "the JSON topic the table consumes")
    init.add_argument("--replicas", type=int, default=None,
                      help="replicasPerPartition (default: the shipped config's)")  # fmt: skip
    init.add_argument("--auth-token", default=None, metavar="TOKEN",
                      help="credentials for an authenticating controller, as Pinot's admin "
                      "tools' -authToken: sent as Authorization, 'Basic ' put in front "
                      "unless it starts with it")  # fmt: skip
    init.set_defaults(func=run_init)


# spelled out, not imported: monitoring (and its Kafka client) stays out of `sprig --help`
_DEFAULT_TOPIC = "consumer_offsets_json"


def _topic_argument(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--topic", default=None, help=f"{what} (default {_DEFAULT_TOPIC})")


def _stop_on_sigterm() -> threading.Event:
    """An event SIGTERM sets, so a long-running action finishes its round and closes."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


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
    stop = _stop_on_sigterm()
    sampler.run(args.interval, stop)
    return 0


def run_stream(args: argparse.Namespace) -> int:
    from monitoring.errors import KafkaUnavailableError
    from monitoring.lag_table import ensure_topic
    from monitoring.stream import OffsetsStream
    from monitoring.tables import DEFAULT_TOPIC
    from sprig.errors import CommandError

    try:
        job = OffsetsStream(
            args.bootstrap_server, args.input_topic, args.topic or DEFAULT_TOPIC, args.group,
            args.output_bootstrap_server, args.batch,
        )  # fmt: skip
    except ValueError as exc:
        raise CommandError(f"--batch: {exc}") from None
    if args.metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(args.metrics_port)
    stop = _stop_on_sigterm()
    try:
        # the JSON topic, one partition like the table's own, unless it exists
        ensure_topic(args.output_bootstrap_server or args.bootstrap_server, job.output_topic)
        job.start()
        idle_since = time.monotonic()
        while not stop.is_set():
            if job.step():
                idle_since = time.monotonic()
            elif args.until_idle is not None and time.monotonic() - idle_since >= args.until_idle:
                break
    except KafkaUnavailableError as exc:
        raise CommandError(str(exc)) from exc
    except KeyboardInterrupt:
        pass
    finally:
        job.close()
    s = job.stats
    other = ", ".join(f"{reason} x{n}" for reason, n in sorted(s.not_commits.items())) or "none"
    bad = ", ".join(f"{reason} x{n}" for reason, n in sorted(s.undecodable.items())) or "none"
    print(f"consumed {s.consumed}, produced {s.produced} commit(s) and {s.tombstones} "
          f"tombstone(s) to {job.output_topic}; skipped {s.own_group} own-group record(s); "
          f"not produced: {other}; undecodable: {bad}", file=sys.stderr)  # fmt: skip
    return 0


def run_init(args: argparse.Namespace) -> int:
    from engine.runtime.properties import PinotProperties
    from engine.runtime.service_auth import auth_headers
    from monitoring.errors import MonitoringError
    from monitoring.lag_table import ensure_lag_table
    from monitoring.tables import DEFAULT_TOPIC, TABLE_NAME
    from sprig.errors import CommandError

    if args.replicas is not None and args.replicas < 1:
        raise CommandError(f"--replicas must be at least 1, got {args.replicas}")
    controller = args.controller.rstrip("/")
    topic = args.topic or DEFAULT_TOPIC
    try:
        headers = auth_headers(
            PinotProperties({"cli.auth.token": args.auth_token or ""}), "cli.auth"
        )
        created = ensure_lag_table(
            controller, args.bootstrap_server, topic, args.replicas, headers=headers
        )
    except MonitoringError as exc:
        raise CommandError(str(exc)) from exc
    if created:
        print(f"Created the {TABLE_NAME} REALTIME table on {controller}, consuming topic "
              f"'{topic}' from {args.bootstrap_server}.")  # fmt: skip
    else:
        print(f"The {TABLE_NAME} table already exists on {controller}; nothing changed.")
    return 0
