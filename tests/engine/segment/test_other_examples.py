"""The other example datasets build as Pinot would build them."""

import decimal
import json
from pathlib import Path

import pyarrow as pa

from engine.ingest import read_records
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig


def _load(base: Path, schema_name: str, config_name: str):
    schema = Schema.from_json((base / schema_name).read_text())
    return schema, TableConfig.from_json((base / config_name).read_text(), schema)


def test_billing_csv(pinot_examples, tmp_path):
    base = pinot_examples / "batch" / "billing"
    schema, config = _load(base, "billing_schema.json", "billing_offline_table_config.json")
    csv_path = base / "rawdata" / "billing_data.csv"
    result = build_segment(read_records(csv_path, schema=schema), schema, config, tmp_path)
    lines = csv_path.read_text().strip().splitlines()
    assert result.num_rows == len(lines) - 1
    assert result.name == "billing_0"  # no time column: <table>_<seq>
    segment = load_segment(result.path)
    first = dict(zip(lines[0].split(","), lines[1].split(","), strict=True))
    assert segment.column("totalToPay").values()[0] == decimal.Decimal(first["totalToPay"])
    assert segment.column("isCarOwner").values()[0] == int(first["isCarOwner"])
    assert segment.column("firstName").values()[0] == first["firstName"]
    props = (result.path / "metadata.properties").read_text()
    assert f"segment.total.docs = {result.num_rows}" in props
    assert "column.totalToPay.dataType = BIG_DECIMAL" in props


def test_github_events_json_with_from_date_time(pinot_examples, tmp_path):
    base = pinot_examples / "minions" / "stream" / "githubEvents"
    schema, config = _load(
        base, "githubEvents_schema.json", "githubEvents_offline_table_config.json"
    )
    path = base / "rawdata" / "2021-07-21-few-hours.json"
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    result = build_segment(read_records(path, schema=schema), schema, config, tmp_path)
    segment = load_segment(result.path)
    assert segment.total_docs == len(events)
    assert segment.metadata.time_column == "created_at_timestamp"
    first = events[0]["created_at"]  # e.g. 2021-07-21T06:00:00Z
    assert segment.column("created_at").values()[0] == first
    ts = segment.column("created_at_timestamp").values()
    assert ts[0] == 1626847200000 and segment.metadata.start_time == ts.min()
    assert segment.column("id").inverted_index is not None


def test_meetup_rsvp_schema_transform(pinot_examples, tmp_path):
    base = pinot_examples / "stream" / "meetupRsvp"
    schema, config = _load(base, "meetupRsvp_schema.json", "meetupRsvp_realtime_table_config.json")
    rows = pa.table(
        {
            "event_id": ["e1", "e2"],
            "group_lon": [-122.4, 2.35],
            "group_lat": [37.77, 48.85],
            "rsvp_count": [1, 3],
            "mtime": [1626847200000, 1626847260000],
        }
    )
    segment = load_segment(build_segment(rows, schema, config, tmp_path).path)
    location = segment.column("location").values()
    assert len(location[0]) == 21 and location[0][:5] == b"\x01\x01\x00\x00\x00"  # WKB point
    assert segment.table_name == "meetupRsvp_REALTIME"
    assert list(segment.column("group_country").values()) == ["null", "null"]
