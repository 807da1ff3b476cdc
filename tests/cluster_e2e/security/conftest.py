"""One real cluster for the attacks of issue 28 (controller, one server, a broker, each a
process), with its limits set low enough to reach quickly: segments unpack to at most 20 MB,
the broker and server take 24 connections and give a request 2 s to arrive. Every test
checks that what it sent was refused with a 4xx, that nothing appeared outside the roots, and
that every process still answers."""

from __future__ import annotations

import json
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pytest
import requests

from tests.cluster_e2e.conftest import Cluster, start_cluster, stop_cluster

MAX_UNPACKED = 20_000_000
MAX_CONNECTIONS = 24
READ_TIMEOUT_S = 2
SCHEMA = {
    "schemaName": "victims",
    "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING"}],
    "metricFieldSpecs": [{"name": "n", "dataType": "LONG"}],
}
TABLE = {
    "tableName": "victims", "tableType": "OFFLINE",
    "segmentsConfig": {"replication": "1", "schemaName": "victims"},
    "tableIndexConfig": {}, "tenants": {}, "metadata": {},
}  # fmt: skip


@dataclass
class Target:
    cluster: Cluster
    outside: Path  # a folder outside every root, with a file an attacker wants gone or read
    output_root: Path  # SPRIG_OUTPUT_ROOTS
    zk_address: str

    @property
    def ctl(self) -> str:
        return self.cluster.controller_url

    def post(self, path: str, **kwargs) -> requests.Response:
        return requests.post(f"{self.ctl}{path}", timeout=60, **kwargs)

    def assert_healthy(self) -> None:
        """Every process answers, and nothing outside the roots was touched."""
        assert requests.get(f"{self.ctl}/health", timeout=10).text == "OK"
        assert requests.get(f"{self.cluster.broker_url}/health", timeout=10).status_code == 200
        for process in [self.cluster.broker, *self.cluster.servers.values()]:
            assert process.alive(), process.name
        assert self.cluster.controller_process.alive()
        assert (self.outside / "precious.txt").read_text() == "keep me"

    def ensure_table(self) -> None:
        """The victims table (a test may have deleted it)."""
        if requests.get(f"{self.ctl}/tables/victims", timeout=10).status_code == 404:
            response = self.post("/tables", json=TABLE)
            assert response.status_code == 200, response.text

    def upload(self, tar: Path, **params) -> requests.Response:
        with tar.open("rb") as handle:
            return self.post("/segments", params={"tableName": "victims",
                                                  "tableType": "OFFLINE", **params},
                             files={"file": (tar.name, handle, "application/gzip")})  # fmt: skip


def segment_dir(workdir: Path, name: str, rows: int = 3) -> Path:
    """A real segment built under ``workdir``, then renamed to ``name`` in its metadata only
    (the CRC does not cover metadata.json), as an attacker would."""
    from engine.segment import build_segment
    from engine.spi import Schema, TableConfig

    schema = Schema.from_json(SCHEMA)
    config = TableConfig.from_json(TABLE, schema=schema)
    out = workdir / "built"
    shutil.rmtree(out, ignore_errors=True)
    data = pa.table({"city": [f"c{i}" for i in range(rows)], "n": list(range(rows))})
    built = build_segment(data, schema, config, out, segment_name="plain")
    meta = json.loads((built.path / "metadata.json").read_text())
    meta["segmentName"] = name
    (built.path / "metadata.json").write_text(json.dumps(meta))
    return built.path


def segment_tar(workdir: Path, name: str, *, extra: dict[str, int] | None = None) -> Path:
    """``segment_dir`` as a tar.gz; ``extra`` adds files of zeros (name -> bytes) to it."""
    seg = segment_dir(workdir, name)
    for file_name, size in (extra or {}).items():
        with (seg / file_name).open("wb") as out:
            out.truncate(size)
    tar = workdir / f"seg-{abs(hash(name))}.tar.gz"
    with tarfile.open(tar, "w:gz") as archive:
        archive.add(seg, arcname=seg.name)
    return tar


@pytest.fixture(scope="package")
def target(zookeeper, tmp_path_factory) -> Iterator[Target]:
    work = tmp_path_factory.mktemp("attacks")
    outside = work / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    output_root = work / "pushed"
    output_root.mkdir()
    cluster = start_cluster(zookeeper.address, work / "cluster", servers=1, extra_env={
        "SPRIG_SEGMENT_MAX_UNPACKED_BYTES": str(MAX_UNPACKED),
        "SPRIG_HTTP_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "SPRIG_HTTP_READ_TIMEOUT_S": str(READ_TIMEOUT_S),
        "SPRIG_OUTPUT_ROOTS": str(output_root),
        "SPRIG_OUTBOUND_ALLOWED_HOSTS": "localhost",
    })  # fmt: skip
    try:
        running = Target(cluster, outside, output_root, zookeeper.address)
        for path, body in (("/schemas", SCHEMA), ("/tables", TABLE)):
            response = running.post(path, json=body)
            assert response.status_code == 200, response.text
        yield running
    finally:
        stop_cluster(cluster)
