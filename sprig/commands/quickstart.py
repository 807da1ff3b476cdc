"""`sprig quickstart`: a whole cluster with example data in one command, stopped by Ctrl-C.

It starts the service stack, the controller, one broker, two servers and a minion, and keeps
them running (a process that exits is restarted; see sprig/stack/supervisor.py); creates
the airlineStats, billing and clientSalaryNulls (null handling) tables from Apache Pinot's
example configs (examples/pinot), with a replica on each server; loads their raw data through
the Spark batch ingestion job; creates the githubEvents (hybrid, with RealtimeToOffline) and
airlineStats REALTIME tables and streams their sample data into the local Kafka until Ctrl-C
(sprig/stack/example_streams.py); creates the upsert tables of Pinot's upsertMeetupRsvp example
and streams RSVP changes (updates and deletes) into them (sprig/stack/upsert_examples.py); and
prints the console URL, example queries and what to watch.
``--external`` runs the same against the ZooKeeper and deep store named by SPRIG_ZK and
SPRIG_DEEP_STORE_URI instead of local ones.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import requests

from engine.common.env import seconds_from_env
from engine.common.errors import ConfigError
from monitoring.errors import MonitoringError
from monitoring.lag_table import ensure_lag_table, start_sampling
from sprig.commands.stack import quickstart_state_path
from sprig.errors import CommandError
from sprig.runtime import REPO_ROOT, AlreadyRunning, SingleInstanceLock, wait_for_stop_signal
from sprig.stack import (
    LocalStack,
    ServiceError,
    ServiceProcess,
    check_java,
    example_streams,
    upsert_examples,
)
from sprig.stack.cluster import (
    broker_process,
    controller_process,
    minion_process,
    server_process,
)
from sprig.stack.demo_group import DemoGroup
from sprig.stack.process import choose_port
from sprig.stack.quickstart_summary import print_summary, process_address
from sprig.stack.supervisor import Supervisor, write_state_file

DEFAULT_CONTROLLER_PORT = 9000
DEFAULT_BROKER_PORT = 8099
DEFAULT_SERVER_PORTS = ((8098, 8097), (8096, 8095))
# a replica of every segment on each server: one dead server costs no answer
REPLICATION = len(DEFAULT_SERVER_PORTS)
INSTANCE_HOST = "127.0.0.1"
EXAMPLES_DIR = REPO_ROOT / "examples" / "pinot"
EXAMPLE_TABLES = ("airlineStats", "billing", "clientSalaryNulls")
LOAD_TIMEOUT_S = 300
STREAM_RATE_PER_S = 10.0  # records a second into each example topic
# the Kafka consumer lag page's history, a few points a minute; the variable lets a test wait less
LAG_SAMPLE_ENV, LAG_SAMPLE_INTERVAL_S = "SPRIG_QUICKSTART_LAG_SAMPLE_S", 30.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "quickstart",
        help="start a local cluster with example batch and streaming data; Ctrl-C stops everything",
        description="Start ZooKeeper, Redis and Apache Kafka, then the controller "
        "(REST API and console), a broker, two servers and a minion; create the airlineStats, "
        "billing and clientSalaryNulls tables from Apache Pinot's example configs and load "
        "their data with the "
        "Spark ingestion job; stream Pinot's githubEvents and airlineStats samples into the "
        "githubEvents (hybrid) and airlineStats REALTIME tables until Ctrl-C. Services "
        "whose SPRIG_ZK / SPRIG_REDIS_URL / SPRIG_KAFKA_BROKERS variable is set are used as external services instead of started. A process that "
        "exits is restarted (1, 2, 4 ... 30 s apart; given up after 5 crashes in 5 minutes); "
        "`sprig stack status` lists them. Ctrl-C stops every process it started.",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"controller port (default {DEFAULT_CONTROLLER_PORT}, or the next free one if it is taken; "
        "a port given here must be free)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the controller database, deep store and logs go (default: a new temp dir)",
    )
    parser.add_argument(
        "--external",
        action="store_true",
        help="use the external ZooKeeper at $SPRIG_ZK and the deep store at "
        "$SPRIG_DEEP_STORE_URI (both required) instead of local ones",
    )
    parser.add_argument(
        "--no-data", action="store_true", help="create no example tables and load no data"
    )
    parser.add_argument(
        "--stream-rate",
        type=float,
        default=STREAM_RATE_PER_S,
        help=f"records a second produced into each example topic (default {STREAM_RATE_PER_S:g})",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.stream_rate <= 0:
        raise CommandError(f"--stream-rate must be above 0, got {args.stream_rate:g}")
    try:
        lag_interval_s = seconds_from_env(LAG_SAMPLE_ENV, LAG_SAMPLE_INTERVAL_S, zero_ok=False)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    try:
        check_java()
    except ServiceError as exc:
        raise CommandError(str(exc)) from None
    if args.external:
        missing = [v for v in ("SPRIG_ZK", "SPRIG_DEEP_STORE_URI") if not os.environ.get(v)]
        if missing:
            raise CommandError(
                f"--external needs {' and '.join(missing)} set, e.g. SPRIG_ZK=zk-host:2181 "
                "SPRIG_DEEP_STORE_URI=s3://bucket/sprig (or a shared directory)"
            )
    lock = SingleInstanceLock("quickstart")
    try:
        lock.acquire()
    except AlreadyRunning as exc:
        url = exc.holder.get("console")
        hint = f"; its console is at {url}" if url else ""
        raise CommandError(f"{exc}{hint}. Stop it with Ctrl-C in its terminal first.") from None

    data_dir = (args.data_dir or Path(tempfile.mkdtemp(prefix="sprig-quickstart-"))).resolve()
    workdir = data_dir / "processes"
    # with --external, SPRIG_ZK is set (checked above), so ZooKeeper is not started
    stack = LocalStack(data_dir / "stack", honour_external=True)
    children: list[ServiceProcess] = []
    streams: list[example_streams.SampleStream] = []
    demo: DemoGroup | None = None
    supervisor: Supervisor | None = None
    stop_sampling: Callable[[], None] | None = None
    try:
        port = _controller_port(args.port)
        print(f"Starting the service stack in {data_dir} ...", flush=True)
        stack.start()
        env = {
            **stack.env(),
            "SPRIG_DATA_DIR": str(data_dir / "controller"),
            **example_streams.data_root_env(data_dir),
            "SPRIG_CONTROLLER_HOST": INSTANCE_HOST,
            "DJANGO_SETTINGS_MODULE": os.environ.get(
                "DJANGO_SETTINGS_MODULE", "config.settings.local"
            ),
        }
        if args.external:
            env["SPRIG_ZK"] = os.environ["SPRIG_ZK"]
            env["SPRIG_DEEP_STORE_URI"] = os.environ["SPRIG_DEEP_STORE_URI"]
        broker_port = choose_port("broker", DEFAULT_BROKER_PORT, host="0.0.0.0")
        print("Starting the controller, a broker, two servers and a minion ...", flush=True)
        children = [controller_process(workdir, port, env)]
        children.append(broker_process(workdir, broker_port, env, host=INSTANCE_HOST))
        for i, (query_port, admin_port) in enumerate(DEFAULT_SERVER_PORTS, start=1):
            query_port = choose_port("server", query_port, host="0.0.0.0")
            admin_port = choose_port("server admin", admin_port, host="0.0.0.0")
            if admin_port == query_port:
                admin_port = choose_port("server admin", query_port + 1, host="0.0.0.0")
            env_i = {**env, "SPRIG_DATA_DIR": str(data_dir / f"server-{i}")}
            children.append(
                server_process(
                    workdir, query_port, admin_port, env_i, host=INSTANCE_HOST, name=f"server-{i}"
                )
            )
        children.append(minion_process(workdir, env))
        for child in children:
            child.start()
        for child in children:
            child.wait_ready()
        console = f"http://localhost:{port}"
        broker_url = f"http://localhost:{broker_port}"
        lock.update(console=console, broker=broker_url, data_dir=str(data_dir))
        supervisor = _supervise(stack, children, console, broker_url, data_dir)
        loaded = {}
        if not args.no_data:
            loaded = load_example_tables(
                f"http://127.0.0.1:{port}", f"http://127.0.0.1:{broker_port}", data_dir,
                env, lambda: _given_up(supervisor),
            )  # fmt: skip
        kafka = env.get("SPRIG_KAFKA_BROKERS")
        guide: list[str] = []
        if kafka and not args.no_data:
            controller = f"http://127.0.0.1:{port}"
            example_streams.create_stream_tables(controller, kafka, EXAMPLES_DIR, REPLICATION)
            upsert_examples.create_upsert_tables(controller, kafka, EXAMPLES_DIR)
            streams = example_streams.start_sample_streams(kafka, EXAMPLES_DIR, args.stream_rate)
            streams.append(upsert_examples.start_rsvp_stream(kafka, EXAMPLES_DIR, args.stream_rate))
            # a real consumer group for the Kafka consumers page, behind part of the time
            demo = DemoGroup(kafka, example_streams.GITHUB_TABLE, args.stream_rate).start()
            guide = example_streams.guide(console, broker_url, kafka, args.stream_rate,
                                          EXAMPLES_DIR, data_dir)  # fmt: skip
            guide += upsert_examples.guide(console, args.stream_rate)
        if kafka:  # lag history of the stack's own Kafka for /console/consumers
            try:
                ensure_lag_table(f"http://127.0.0.1:{port}", kafka, replicas=REPLICATION)
                stop_sampling = start_sampling(kafka, lag_interval_s)
                print(f"Sampling consumer lag of {kafka} every {lag_interval_s:g} s into "
                      f"the consumer_offsets table: {console}/console/consumers", flush=True)  # fmt: skip
            except MonitoringError as exc:  # the batch cluster is still worth running
                print(f"Consumer lag history is not sampled: {exc}", flush=True)
        print_summary(console, broker_url, stack, children, data_dir, loaded, guide, EXAMPLES_DIR)
        why = wait_for_stop_signal()
        print(f"\nStopping ({why}) ...", flush=True)
    except ServiceError as exc:
        raise CommandError(str(exc)) from None
    finally:
        # a second Ctrl-C must not cut the tear-down short and leave children behind
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for stream in streams:  # before Kafka goes
            stream.stop()
        if demo is not None:
            demo.stop()
        if stop_sampling is not None:
            stop_sampling()
        if supervisor is not None:
            supervisor.stop()  # every process, the stack's too, last started first
        else:
            for child in reversed(children):
                child.stop()
            stack.stop()
        quickstart_state_path().unlink(missing_ok=True)
        lock.release()
    print("Everything is stopped.")
    return 0


def _controller_port(requested: int | None) -> int:
    if requested is not None:
        return choose_port("controller", requested, strict=True, host="0.0.0.0")
    port = choose_port("controller", DEFAULT_CONTROLLER_PORT, host="0.0.0.0")
    if port != DEFAULT_CONTROLLER_PORT:
        print(
            f"Port {DEFAULT_CONTROLLER_PORT} is in use; the controller takes port {port} instead.",
            flush=True,
        )
    return port


def _supervise(
    stack: LocalStack,
    children: list[ServiceProcess],
    console: str,
    broker_url: str,
    data_dir: Path,
) -> Supervisor:
    """Watch every process this run started; each change rewrites the state file that
    `sprig stack status` reads."""
    state = {"pid": os.getpid(), "console": console, "broker": broker_url,
             "data_dir": str(data_dir), "started": time.time()}  # fmt: skip
    path = quickstart_state_path()
    supervisor = Supervisor(
        on_change=lambda rows: write_state_file(path, {**state, "processes": rows})
    )
    for row in stack.describe():
        service = stack.services.get(row["service"])
        if service is not None and service.process is not None:
            supervisor.adopt(service.process, str(row["address"]))
    for child in children:
        supervisor.adopt(child, process_address(child, console, broker_url))
    supervisor.watch()
    return supervisor


def _given_up(supervisor: Supervisor) -> str | None:
    for member in supervisor.given_up():
        return f"{member.name} was given up after repeated crashes; see {member.process.log_path}"
    return None


# --- example data ------------------------------------------------------------------------------
def load_example_tables(
    controller: str,
    broker: str,
    data_dir: Path,
    env: dict[str, str],
    dead_child: Callable[[], str | None],
) -> dict[str, str]:
    """Create each example table (schema, then OFFLINE table config) and load its raw data
    with the Spark ingestion job, then wait until the broker serves every segment. A table
    that already exists (an external cluster used before) is left as it is. Returns
    table -> "N rows in M segments"."""
    loaded = {}
    for table in EXAMPLE_TABLES:
        folder = EXAMPLES_DIR / "batch" / table
        if requests.get(f"{controller}/tables/{table}", timeout=30).status_code == 200:
            print(f"Table {table} already exists; its data is not loaded again.", flush=True)
        else:
            for path, name in (("/schemas", f"{table}_schema.json"),
                               ("/tables", f"{table}_offline_table_config.json")):  # fmt: skip
                body = example_config(folder / name)
                if table == example_streams.AIRLINE_TABLE and path == "/tables":
                    body = example_streams.airline_minion_tasks(body, EXAMPLES_DIR, data_dir)
                response = requests.post(f"{controller}{path}", json=body, timeout=60)
                if not response.ok:
                    raise CommandError(
                        f"creating {table} from {folder / name} failed: "
                        f"HTTP {response.status_code} {response.text[:300]}"
                    )
            print(f"Loading {table} with the Spark ingestion job ...", flush=True)
            _ingest(folder, controller, data_dir / "segments" / table, env)
        loaded[table] = _wait_served(controller, broker, table, dead_child)
    return loaded


def example_config(path: Path) -> dict:
    """A Pinot example config as the quickstart posts it: a table config gets REPLICATION
    replicas (the examples ask for one)."""
    body = orjson.loads(path.read_bytes())
    if isinstance(body.get("segmentsConfig"), dict):
        body["segmentsConfig"]["replication"] = str(REPLICATION)
    return body


def _ingest(folder: Path, controller: str, output_dir: Path, env: dict[str, str]) -> None:
    argv = [
        sys.executable, "-m", "sprig", "ingest",
        "--spec", str(folder / "ingestionJobSpec.yaml"),
        "--controller", controller,
        "--input-dir", str(folder / "rawdata"),
        "--output-dir", str(output_dir),
        "--master", os.environ.get("SPRIG_SPARK_MASTER", "local[2]"),
    ]  # fmt: skip
    result = subprocess.run(argv, env={**os.environ, **env}, check=False)
    if result.returncode != 0:
        raise CommandError(f"the ingestion job for {folder.name} failed (exit {result.returncode})")


def _wait_served(
    controller: str, broker: str, table: str, dead_child: Callable[[], str | None]
) -> str:
    ideal = requests.get(f"{controller}/tables/{table}/idealstate", timeout=30).json()
    expected = len((ideal or {}).get("OFFLINE") or {})
    deadline = time.monotonic() + LOAD_TIMEOUT_S
    last: dict = {}
    while time.monotonic() < deadline:
        why = dead_child()
        if why:
            raise CommandError(why)
        try:
            # the OFFLINE table only: its REALTIME half (a cluster used before) has other segments
            sql = f"SELECT COUNT(*) FROM {table}_OFFLINE"
            last = requests.post(f"{broker}/query/sql", json={"sql": sql}, timeout=30).json()
        except (requests.RequestException, ValueError):
            last = {}
        if (
            last.get("resultTable")
            and not last.get("exceptions")
            and last.get("numSegmentsQueried") == expected
        ):
            rows = last["resultTable"]["rows"][0][0]
            return f"{rows} rows in {expected} segments"
        time.sleep(0.5)
    raise CommandError(
        f"{table}: the broker did not serve all {expected} segments within "
        f"{LOAD_TIMEOUT_S} s; last answer: {str(last)[:300]}"
    )
