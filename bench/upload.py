"""Creating a table through the controller and uploading Arrow rows to it as built segments
(the multi-stage benchmark's tables)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import requests

from engine.segment import build_segment, pack_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig


def create_table(controller: str, name: str, schema_json: dict,
                 config_json: dict) -> tuple[Schema, TableConfig]:  # fmt: skip
    for path, body in (("/schemas", schema_json), ("/tables", config_json)):
        response = requests.post(f"{controller}{path}", json=body, timeout=60)
        if not response.ok:
            raise RuntimeError(f"POST {path} {name}: {response.status_code} {response.text}")
    return Schema.from_json(schema_json), TableConfig.from_json(config_json)


def upload_segment(controller: str, workdir: Path, rows: pa.Table, schema: Schema,
                   config: TableConfig, segment: str) -> None:  # fmt: skip
    name = config.table_name
    built = build_segment(rows, schema, config, workdir / "built" / name, segment_name=segment)
    tar = pack_segment(built.path, workdir / f"{segment}.tar.gz")
    with tar.open("rb") as handle:
        requests.post(f"{controller}/segments", params={"tableName": name, "tableType": "OFFLINE"},
                      files={"file": (tar.name, handle, "application/gzip")},
                      timeout=600).raise_for_status()  # fmt: skip
