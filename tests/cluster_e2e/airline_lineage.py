"""What the segment-lineage end-to-end tests share: three days of Pinot's airline example
as segments of a 2-replica OFFLINE table, a builder for merged segments of those rows, and
loading the days into a cluster."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from tests.cluster_e2e.conftest import TABLE, Cluster, upload_tar
from tests.engine.query import conformance


@dataclass
class AirlineDays:
    schema_json: dict
    config_json: dict
    days: list[list[dict]]  # the rows of each day, from the Avro files
    build: Callable[[list[dict], str | None, int], tuple[str, Path]]  # rows -> (name, tar)

    @property
    def total_distance(self) -> float:
        return float(sum(r["Distance"] for rows in self.days for r in rows))


def airline_days(pinot_examples: Path, out: Path) -> AirlineDays:
    from engine.segment import build_segment, pack_segment
    from engine.spi.schema import Schema
    from engine.spi.table_config import TableConfig

    schema_json = conformance.airline_schema(pinot_examples)
    config_json = conformance.airline_table_config(pinot_examples)
    config_json["segmentsConfig"]["replication"] = "2"
    schema, config = Schema.from_json(schema_json), TableConfig.from_json(config_json)
    days = [conformance.read_avro(p) for p in conformance.airline_avro_files(pinot_examples)[:3]]

    def build(rows: list[dict], name: str | None, sequence: int) -> tuple[str, Path]:
        result = build_segment(pa.Table.from_pylist(rows), schema, config, out / "built",
                               segment_name=name, sequence_id=sequence)  # fmt: skip
        return result.name, pack_segment(result.path, out / f"{result.name}.tar.gz")

    return AirlineDays(schema_json, config_json, days, build)


def load_days(cluster: Cluster, airline: AirlineDays, originals: list[tuple[str, Path]]) -> None:
    """Create the table, upload one segment per day and wait until the broker counts them."""
    for path, body in (("/schemas", airline.schema_json), ("/tables", airline.config_json)):
        assert cluster.controller("POST", path, json=body).ok
    for name, tar in originals:
        upload(cluster, tar)
        cluster.segments.append(name)
    cluster.total_rows = sum(len(rows) for rows in airline.days)
    cluster.wait_all_online(replicas=2)
    cluster.wait_broker_sees(cluster.total_rows)


def upload(cluster: Cluster, tar: Path) -> None:
    upload_tar(cluster, TABLE, tar)
