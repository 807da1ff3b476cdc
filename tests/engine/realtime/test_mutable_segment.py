"""Queries on a consuming segment give what the same rows give as an immutable segment (the
reference), after every append; the segment converts into an immutable one with its indexes."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from engine.ingest import records_to_batch
from engine.query.runner import run_query
from engine.realtime import MutableSegment
from engine.segment import build_segment, load_segment
from engine.spi import Schema, TableConfig

SCHEMA = {
    "schemaName": "events",
    "dimensionFieldSpecs": [
        {"name": "city", "dataType": "STRING"},
        {"name": "code", "dataType": "INT"},
        {"name": "tags", "dataType": "STRING", "singleValueField": False},
    ],
    "metricFieldSpecs": [
        {"name": "clicks", "dataType": "LONG"},
        {"name": "price", "dataType": "DOUBLE"},
        {"name": "note", "dataType": "STRING"},
    ],
    "dateTimeFieldSpecs": [
        {"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
         "granularity": "1:MILLISECONDS"}
    ],
}  # fmt: skip


def table_config(null_handling: bool = False) -> TableConfig:
    return TableConfig.from_json(
        {
            "tableName": "events",
            "tableType": "REALTIME",
            "segmentsConfig": {"timeColumnName": "ts", "schemaName": "events"},
            "tableIndexConfig": {
                "invertedIndexColumns": ["city", "tags"],
                "noDictionaryColumns": ["price", "note"],
                "rangeIndexColumns": ["clicks"],
                "bloomFilterColumns": ["code"],
                "nullHandlingEnabled": null_handling,
            },
            "ingestionConfig": {
                "streamIngestionConfig": {
                    "streamConfigMaps": [
                        {
                            "streamType": "kafka",
                            "stream.kafka.topic.name": "events",
                            "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream."
                            "kafka.KafkaJSONMessageDecoder",
                        }
                    ]
                },
                "transformConfigs": [{"columnName": "code", "transformFunction": "plus(raw, 1)"}],
                "filterConfig": {"filterFunction": "clicks = 999"},
            },
        }
    )


def records(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        row = {
            "city": rng.choice(["a", "b", "c", "dd", "e", None]),
            "raw": rng.randrange(0, 20),
            "tags": rng.sample(["x", "y", "z", "w"], rng.randrange(0, 3)),
            "clicks": rng.choice([rng.randrange(0, 10), 999]),
            "price": round(rng.uniform(0, 5), 2),
            "note": rng.choice(["n1", "n2", None]),
            "ts": 1_700_000_000_000 + rng.randrange(0, 10_000_000),
        }
        out.append(row)
    return out


QUERIES = [
    "SELECT COUNT(*) FROM events",
    "SELECT COUNT(*) FROM events WHERE city = 'b'",
    "SELECT city, SUM(clicks), MAX(price), MIN(code) FROM events GROUP BY city ORDER BY city",
    "SELECT COUNT(*) FROM events WHERE clicks BETWEEN 3 AND 7",
    "SELECT COUNT(*) FROM events WHERE tags = 'x'",
    "SELECT tags, COUNT(*) FROM events GROUP BY tags ORDER BY tags",
    "SELECT city, ts, price FROM events ORDER BY ts DESC, city LIMIT 7",
    "SELECT DISTINCTCOUNT(city), DISTINCTCOUNT(note) FROM events",
    "SELECT COUNT(*) FROM events WHERE price > 2.5 AND note = 'n1'",
    "SELECT COUNT(*) FROM events WHERE city IN ('a', 'c') AND clicks < 5",
    "SELECT city, COUNT(*) FROM events WHERE city <> 'a' GROUP BY city ORDER BY city",
    "SELECT code, COUNT(*) FROM events WHERE code = 5 GROUP BY code",
    "SELECT MIN(ts), MAX(ts), SUM(price) FROM events WHERE ts > 1700005000000",
    "SELECT COUNT(*) FROM events WHERE city = 'nowhere'",
]


def rows_of(response: dict) -> list:
    assert not response["exceptions"], response["exceptions"]
    return response["resultTable"]["rows"]


def same_rows(got: list, want: list) -> bool:
    """Equal rows, floats within rounding (sums may add in another order)."""
    if len(got) != len(want):
        return False
    for row_got, row_want in zip(got, want, strict=True):
        for a, b in zip(row_got, row_want, strict=True):
            if isinstance(a, float) or isinstance(b, float):
                if a != pytest.approx(b):
                    return False
            elif a != b:
                return False
    return True


def reference(rows: list[dict], schema: Schema, config: TableConfig, tmp_path, name: str):
    built = build_segment(
        records_to_batch(rows), schema, config, tmp_path / name, segment_name=name,
        continue_on_error=True,
    )  # fmt: skip
    return load_segment(built.path)


@pytest.mark.parametrize("null_handling", [False, True])
def test_queries_match_an_immutable_segment_after_every_append(tmp_path, null_handling):
    schema = Schema.from_json(SCHEMA)
    config = table_config(null_handling)
    segment = MutableSegment("events__0__0__20260101T0000Z", schema, config)
    queries = QUERIES + (
        ["SELECT COUNT(*) FROM events WHERE city IS NULL",
         "SELECT COUNT(*) FROM events WHERE note IS NOT NULL"] if null_handling else []
    )  # fmt: skip
    seen: list[dict] = []
    for step, size in enumerate([1, 37, 500, 2000]):
        batch = records(size, seed=step)
        seen += batch
        result = segment.index(records_to_batch(batch))
        assert result.indexed + result.filtered == size and not result.errors
        expected = reference(seen, schema, config, tmp_path, f"ref{step}")
        assert segment.num_docs == expected.total_docs
        snapshot = segment.snapshot()
        for sql in queries:
            got = rows_of(run_query(sql, [snapshot], table_schema=schema))
            want = rows_of(run_query(sql, [expected], table_schema=schema))
            assert same_rows(got, want), sql
    # the snapshot taken before an append does not see the new rows
    before = segment.snapshot()
    segment.index(records_to_batch(records(10, seed=99)))
    assert rows_of(run_query("SELECT COUNT(*) FROM events", [before]))[0][0] == before.total_docs
    assert segment.snapshot().total_docs > before.total_docs


def test_bad_rows_are_skipped_and_counted(tmp_path):
    segment = MutableSegment("s", Schema.from_json(SCHEMA), table_config())
    batch = records_to_batch(
        [
            {"city": "a", "raw": 1, "clicks": 1, "price": 1.0, "ts": 1_700_000_000_000},
            {"city": "b", "raw": 2, "clicks": "lots", "price": 1.0, "ts": 1_700_000_000_000},
            {"city": "c", "raw": 3, "clicks": 2, "price": 1.0, "ts": 1_700_000_000_000},
        ]
    )
    result = segment.index(batch)
    assert result.indexed == 2 and segment.num_rows_errored == 1
    assert result.errors[0].row == 1 and "clicks" in result.errors[0].message
    rows = rows_of(run_query("SELECT city FROM events ORDER BY city", [segment.snapshot()]))
    assert rows == [["a"], ["c"]]


def test_built_segment_equals_the_reference_and_has_the_indexes(tmp_path):
    schema = Schema.from_json(SCHEMA)
    config = table_config(null_handling=True)
    segment = MutableSegment("events__3__7__20260101T0000Z", schema, config)
    data = records(3000, seed=5)
    for start in range(0, len(data), 700):
        segment.index(records_to_batch(data[start : start + 700]))
    built = segment.build(tmp_path / "out", custom_metadata={"segment.realtime.endOffset": "3000"})
    assert built.name == "events__3__7__20260101T0000Z"
    loaded = load_segment(built.path)
    assert loaded.total_docs == segment.num_docs
    assert loaded.metadata.custom["segment.realtime.endOffset"] == "3000"
    assert "inverted" in loaded.column("city").metadata.indexes
    assert "range" in loaded.column("clicks").metadata.indexes
    assert "bloom" in loaded.column("code").metadata.indexes
    expected = reference(data, schema, config, tmp_path, "ref")
    for sql in [*QUERIES, "SELECT COUNT(*) FROM events WHERE city IS NULL"]:
        got = rows_of(run_query(sql, [loaded], table_schema=schema))
        want = rows_of(run_query(sql, [expected], table_schema=schema))
        assert same_rows(got, want), sql


def test_memory_per_row_is_bounded():
    schema = Schema.from_json(SCHEMA)
    segment = MutableSegment("s", schema, table_config())
    data = records(20_000, seed=1)
    segment.index(records_to_batch(data))
    # 4 B per dictionary id x 4 columns + 8 B per raw double + arrow text + MV offsets, with
    # buffers at most doubled: well under 200 B per row
    assert segment.memory_bytes / segment.num_docs < 200
    assert isinstance(segment.to_arrow(), pa.Table)


def test_a_batch_the_transforms_reject_as_a_whole_is_counted_not_raised():
    segment = MutableSegment("s", Schema.from_json(SCHEMA), table_config())
    bad = records_to_batch([{"city": "a", "raw": "not a number", "ts": 1} for _ in range(50)])
    result = segment.index(bad)
    assert result.indexed == 0 and len(result.errors) == 50
    assert [e.row for e in result.errors] == list(range(50))
    assert segment.num_rows_errored == 50
    good = segment.index(records_to_batch(records(20, seed=3)))
    assert good.indexed + good.filtered == 20 and segment.num_docs == good.indexed


def test_queries_while_rows_are_appended_see_consistent_snapshots():
    import threading

    schema = Schema.from_json(SCHEMA)
    segment = MutableSegment("s", schema, table_config())
    batches = [records_to_batch(records(300, seed=100 + i)) for i in range(40)]
    done = threading.Event()
    problems: list[str] = []

    def query_loop():
        last = 0
        while not done.is_set():
            snapshot = segment.snapshot()
            total = rows_of(run_query("SELECT COUNT(*) FROM events", [snapshot]))[0][0]
            groups = rows_of(run_query(
                "SELECT city, COUNT(*) FROM events GROUP BY city LIMIT 100", [snapshot]
            ))  # fmt: skip
            tagged = rows_of(run_query(
                "SELECT COUNT(*) FROM events WHERE city IN ('a', 'b', 'c', 'dd', 'e', 'null')",
                [snapshot],
            ))[0][0]  # fmt: skip
            if total != snapshot.total_docs or sum(g[1] for g in groups) != total:
                problems.append(f"groups {groups} do not add up to {total}")
            if tagged != total or total < last:
                problems.append(f"inverted index saw {tagged} of {total} (before: {last})")
            last = total

    readers = [threading.Thread(target=query_loop) for _ in range(2)]
    for reader in readers:
        reader.start()
    for batch in batches:
        segment.index(batch)
    done.set()
    for reader in readers:
        reader.join(30)
    assert not problems, problems[:3]
    assert rows_of(run_query("SELECT COUNT(*) FROM events", [segment.snapshot()]))[0][0] == (
        segment.num_docs
    )


def test_null_vectors_only_for_the_columns_pinot_makes_nullable():
    """Column-based null handling keeps no null vector for a notNull column: a null there is
    its default value, also in IS NULL (as in an immutable segment built from the rows)."""
    schema = Schema.from_json({
        "schemaName": "events", "enableColumnBasedNullHandling": True,
        "dimensionFieldSpecs": [{"name": "city", "dataType": "STRING", "notNull": True},
                                {"name": "code", "dataType": "INT"}],
    })  # fmt: skip
    segment = MutableSegment("events__0__0__20260101T0000Z", schema, table_config())
    assert set(segment.nulls) == {"code"}
    segment.index(pa.table({"city": pa.array([None, "a"], pa.string()),
                            "code": pa.array([1, None], pa.int32())}))  # fmt: skip
    count = "SELECT COUNT(*) FROM events WHERE {} IS NULL"
    snapshot = segment.snapshot()
    assert run_query(count.format("code"), [snapshot])["resultTable"]["rows"] == [[1]]
    assert run_query(count.format("city"), [snapshot])["resultTable"]["rows"] == [[0]]


def test_a_null_multi_value_stays_null_after_the_commit(tmp_path):
    schema = Schema.from_json({
        "schemaName": "t", "enableColumnBasedNullHandling": True,
        "dimensionFieldSpecs": [{"name": "tags", "dataType": "STRING", "singleValueField": False}],
        "dateTimeFieldSpecs": [{"name": "ts", "dataType": "LONG", "format": "1:MILLISECONDS:EPOCH",
                                "granularity": "1:MILLISECONDS"}],
    })  # fmt: skip
    config = TableConfig.from_json({
        "tableName": "t", "tableType": "REALTIME", "segmentsConfig": {"timeColumnName": "ts"},
        "ingestionConfig": {"streamIngestionConfig": {"streamConfigMaps": [{"streamType": "kafka"}]}},
    })  # fmt: skip
    segment = MutableSegment("t__0__0__20260101T0000Z", schema, config)
    segment.index(pa.Table.from_pylist([{"tags": None, "ts": 1}, {"tags": ["a"], "ts": 2}]))
    built = load_segment(segment.build(tmp_path).path)
    sql = "SELECT COUNT(*) FROM t WHERE tags IS NULL"
    assert run_query(sql, [segment.snapshot()])["resultTable"]["rows"] == [[1]]
    assert run_query(sql, [built])["resultTable"]["rows"] == [[1]]
