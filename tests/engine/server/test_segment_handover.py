"""No query a broker routes to a server fails while that server's segments change hands: a
server in-process against the real ZooKeeper, asked through its query endpoint in a loop.

- a refresh (the same segment name, new content) swaps the loaded copies: every answer is
  the old or the new count, never "segment not served" nor a mix;
- a segment taken away keeps serving for ``SPRIG_SERVER_DROP_DRAIN_S`` after the server's
  current state stopped listing it (brokers route on the external view made from those),
  and one assigned back during that time is served throughout."""

from __future__ import annotations

import threading
import time
import uuid

import orjson
import pyarrow as pa
import pytest
import requests
from kazoo.client import KazooClient

from engine.clusterstate import ClusterStore, Message, SegmentZKMetadata
from engine.common.errors import ConfigError
from engine.query.intermediate import IntermediateResult
from engine.server import ServerConfig, ServerInstance
from engine.server.drain import DRAIN_ENV, drain_seconds_from_env
from sprig.stack.process import free_port
from tests.engine.query import conformance
from tests.engine.server.test_server_instance import assign, current_states, wait_for
from tests.sprig.test_engine_process import sprig

pytestmark = [pytest.mark.integration, pytest.mark.slow]
RESOURCE = "airlineStats_OFFLINE"
DRAIN_S = 2.0


@pytest.fixture(scope="module")
def versions(pinot_examples, tmp_path_factory):
    """Two different builds of segment ``day0``: (tar, rows, crc) of all rows, then of the
    first 100."""
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    schema = Schema.from_json(conformance.airline_schema(pinot_examples))
    config = TableConfig.from_json(conformance.airline_table_config(pinot_examples))
    rows = pa.Table.from_pylist(
        conformance.read_avro(conformance.airline_avro_files(pinot_examples)[0])
    )
    out = tmp_path_factory.mktemp("handover")
    built = []
    for version, table in enumerate([rows, rows.slice(0, 100)]):
        seg = build_segment(table, schema, config, out / f"v{version}", segment_name="day0")
        tar = pack_segment(seg.path, out / f"day0-v{version}.tar.gz")
        built.append((tar, table.num_rows, str(seg.metadata.crc)))
    assert built[0][1] != built[1][1] and built[0][2] != built[1][2]
    return built


@pytest.fixture
def store(zookeeper):
    client = KazooClient(hosts=zookeeper.address)
    client.start(timeout=10)
    cluster = ClusterStore(client, f"hand_{uuid.uuid4().hex[:8]}")
    cluster.ensure_cluster()
    yield cluster
    client.stop()
    client.close()


@pytest.fixture
def server(zookeeper, store, tmp_path):
    instance = ServerInstance(ServerConfig(
        zookeeper.address, store.paths.cluster_name, host="127.0.0.1", bind="127.0.0.1",
        query_port=free_port(), admin_port=free_port(), data_dir=tmp_path / "data",
        session_timeout_s=4.0, resync_interval_s=1.0, drop_drain_s=DRAIN_S,
    ))  # fmt: skip
    instance.start()
    yield instance
    instance.stop()


def publish(store, version) -> None:
    tar, rows, crc = version
    store.put_segment_metadata(SegmentZKMetadata("day0", RESOURCE, crc=crc, total_docs=rows,
                                                 download_url=str(tar)))  # fmt: skip


def ask(server) -> int | list:
    """COUNT(*) of day0 as the server answers a broker: the count, or its exceptions."""
    body = {"sql": "SELECT COUNT(*) FROM airlineStats", "tableNameWithType": RESOURCE,
            "segments": ["day0"]}  # fmt: skip
    url = f"http://127.0.0.1:{server.query_http.port}/query"
    result = IntermediateResult.from_bytes(
        requests.post(url, data=orjson.dumps(body), timeout=10).content
    )
    if result.exceptions:
        return result.exceptions
    from engine.query import compile_query, reduce

    return reduce(compile_query(body["sql"]), [result])["resultTable"]["rows"][0][0]


class QueryLoop(threading.Thread):
    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.answers: list = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.answers.append(ask(self.server))

    def __enter__(self):
        self.start()
        wait_for(lambda: len(self.answers) > 5, what="the first answers")
        return self

    def __exit__(self, *_exc):
        self.stop.set()
        self.join(30)


def test_a_refresh_answers_the_old_or_the_new_copy_never_an_error(server, store, versions):
    old, new = versions
    publish(store, old)
    assign(store, {"day0": "ONLINE"}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {"day0": "ONLINE"}, what="ONLINE")
    with QueryLoop(server) as loop:
        publish(store, new)  # what an upload under the same name (or PurgeTask) does
        store.send_message(server.instance_id, Message("r1", "SEGMENT_REFRESH", RESOURCE, "day0"))
        wait_for(lambda: loop.answers[-1] == new[1], what="the new copy")
        seen = len(loop.answers)
        wait_for(lambda: len(loop.answers) > seen + 20, what="answers after the swap")
    answers = loop.answers
    assert not [a for a in answers if a not in (old[1], new[1])]  # no error, no partial count
    swapped = answers.index(new[1])
    assert answers[0] == old[1] and answers[swapped:] == [new[1]] * (len(answers) - swapped)
    assert current_states(store, server) == {"day0": "ONLINE"}
    assert (server.config.data_dir / RESOURCE / "day0").is_dir()

    # a refresh whose new copy cannot be loaded keeps the current one serving, with the reason
    broken = server.config.data_dir.parent / "broken.tar.gz"
    broken.write_bytes(b"not a tar at all")
    store.put_segment_metadata(SegmentZKMetadata("day0", RESOURCE, crc="1", total_docs=1,
                                                 download_url=str(broken)))  # fmt: skip
    with QueryLoop(server) as loop:
        store.send_message(server.instance_id, Message("r2", "SEGMENT_REFRESH", RESOURCE, "day0"))
        wait_for(lambda: not store.messages(server.instance_id), what="the refresh")
    assert loop.answers == [new[1]] * len(loop.answers)
    (entry,) = server.segments.describe()[RESOURCE]
    assert entry["state"] == "ONLINE" and "corrupt" in entry["error"], entry
    assert current_states(store, server) == {"day0": "ONLINE"}


def test_a_dropped_segment_serves_until_the_drain_ends(server, store, versions):
    version = versions[1]
    publish(store, version)
    assign(store, {"day0": "ONLINE"}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {"day0": "ONLINE"}, what="ONLINE")
    seg_dir = server.config.data_dir / RESOURCE / "day0"

    assign(store, {}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {}, what="left out of the current state")
    left_out = time.monotonic()
    assert ask(server) == version[1]  # brokers may still route here: it answers
    assert seg_dir.is_dir()
    wait_for(lambda: isinstance(ask(server), list), what="the end of the drain")
    assert time.monotonic() - left_out > DRAIN_S - 0.5
    (error,) = ask(server)
    assert error["errorCode"] == 235 and "day0" in error["message"]
    wait_for(lambda: not seg_dir.exists(), what="its files to go")


def test_a_segment_assigned_back_while_draining_serves_throughout(server, store, versions):
    version = versions[1]
    publish(store, version)
    assign(store, {"day0": "ONLINE"}, server.instance_id)
    wait_for(lambda: current_states(store, server) == {"day0": "ONLINE"}, what="ONLINE")
    with QueryLoop(server) as loop:
        assign(store, {}, server.instance_id)
        wait_for(lambda: current_states(store, server) == {}, what="dropped")
        assign(store, {"day0": "ONLINE"}, server.instance_id)
        wait_for(lambda: current_states(store, server) == {"day0": "ONLINE"}, what="back")
        time.sleep(DRAIN_S + 1.5)  # past the first drain's end: it must not unload the segment
    assert loop.answers == [version[1]] * len(loop.answers), loop.answers[-3:]
    assert (server.config.data_dir / RESOURCE / "day0").is_dir()


def test_the_drain_setting():
    assert drain_seconds_from_env({}) == 3.0
    assert drain_seconds_from_env({DRAIN_ENV: " "}) == 3.0
    assert drain_seconds_from_env({DRAIN_ENV: "0"}) == 0.0
    assert drain_seconds_from_env({DRAIN_ENV: " 1.5 "}) == 1.5
    for bad in ("soon", "-1", "nan", "1e9"):
        with pytest.raises(ConfigError, match=DRAIN_ENV):
            drain_seconds_from_env({DRAIN_ENV: bad})


def test_sprig_server_refuses_a_bad_drain_naming_the_variable():
    done = sprig("server", env={DRAIN_ENV: "3s"})  # before any port is bound
    assert done.returncode == 2
    assert done.stderr.startswith("sprig server: ") and DRAIN_ENV in done.stderr
    assert "'3s'" in done.stderr
