"""PurgeTask's segment path on Spark and its planning rules: a real airlineStats segment read
back through the engine, purged by a SQL predicate, a column modification or a registered
RecordPurger, and rebuilt under its own name with PurgeTask.time in its custom metadata; the
generator's config checks and its order (never purged first, then oldest, nothing due)."""

from __future__ import annotations

from types import SimpleNamespace

import orjson
import pytest

from engine.segment import load_segment, unpack_segment
from engine.spi import Schema, TableConfig
from spark_jobs.minion.purge import (
    PURGE_TIME_KEY,
    PurgeSpec,
    PurgeSpecError,
    purge_segment,
    register_record_purger,
)
from tasks.errors import TaskConfigError
from tasks.generators.purge import PurgeTaskGenerator, check_declared_purge
from tests.cluster.conftest import (  # noqa: F401 - fixtures
    airline_dir,
    airline_offline_config,
    airline_schema,
    airline_segments,
)

DAY_MS = 86_400_000


def _rows(directory):
    segment = load_segment(directory)
    try:
        return segment.name, segment.metadata.custom, segment.to_arrow().to_pylist()
    finally:
        segment.close()


@pytest.fixture
def segment(airline_segments, airline_schema, airline_offline_config, tmp_path):  # noqa: F811
    _, tar = airline_segments[0]
    directory = unpack_segment(tar, tmp_path / "in")
    schema = Schema.from_json(airline_schema)
    return directory, schema, TableConfig.from_json(airline_offline_config, schema=schema)


@pytest.mark.integration
def test_purge_filter_and_modification(spark, segment, tmp_path):
    directory, schema, config = segment
    name, _, before = _rows(directory)
    gone = before[0]["Dest"]
    spec = PurgeSpec.resolve("airlineStats_OFFLINE", purge_filter=f"Dest = '{gone}'",
                             modifications={"Origin": "lower(Origin)"},
                             record_purger=None, record_modifier=None)  # fmt: skip
    result, n_before, n_after = purge_segment(spark, directory, schema, config, spec,
                                              tmp_path / "out", 1234)  # fmt: skip
    out_name, custom, after = _rows(result.path)
    kept = [r for r in before if r["Dest"] != gone]
    assert out_name == name and custom[PURGE_TIME_KEY] == "1234"
    assert (n_before, n_after) == (len(before), len(kept)) and 0 < len(kept) < len(before)
    key = ("DaysSinceEpoch", "FlightNum", "Dest", "ArrDelay")
    expected = sorted(({**r, "Origin": r["Origin"].lower()} for r in kept),
                      key=lambda r: tuple(r[k] for k in key))  # fmt: skip
    assert sorted(after, key=lambda r: tuple(r[k] for k in key)) == expected


@pytest.mark.integration
def test_registered_record_purger_and_empty_result(spark, segment, tmp_path):
    directory, schema, config = segment
    _, _, before = _rows(directory)
    register_record_purger("noLongFlights", lambda table: lambda row: row["Distance"] > 1000)
    spec = PurgeSpec.resolve("airlineStats_OFFLINE", purge_filter=None, modifications={},
                             record_purger="noLongFlights", record_modifier=None)  # fmt: skip
    result, _, n_after = purge_segment(spark, directory, schema, config, spec,
                                       tmp_path / "a", 1)  # fmt: skip
    assert n_after == sum(r["Distance"] <= 1000 for r in before) == len(_rows(result.path)[2])
    everything = PurgeSpec.resolve("t", purge_filter="Distance >= 0", modifications={},
                                   record_purger=None, record_modifier=None)  # fmt: skip
    assert purge_segment(spark, directory, schema, config, everything, tmp_path / "b", 1) == (
        None, len(before), 0)  # fmt: skip
    with pytest.raises(PurgeSpecError, match=r"recordPurger.*no RecordPurger named 'nope'"):
        PurgeSpec.resolve("t", purge_filter=None, modifications={}, record_purger="nope",
                          record_modifier=None)  # fmt: skip
    bad = PurgeSpec.resolve("t", purge_filter="NoSuchColumn = 1", modifications={},
                            record_purger=None, record_modifier=None)  # fmt: skip
    with pytest.raises(PurgeSpecError, match="purgeFilter"):
        purge_segment(spark, directory, schema, config, bad, tmp_path / "c", 1)


@pytest.mark.integration
def test_config_sql_never_reads_files_or_calls_java(spark, segment, tmp_path):
    """Issue 28's modify payload, and Spark's own guards should a check ever let one by."""
    from pyspark.errors import AnalysisException

    directory, schema, config = segment
    secret = tmp_path / "secret.txt"
    secret.write_text("the-secret\n")
    payload = (f"concat((SELECT first(name) FROM text.`{secret}` AS t(name)), "
               "reflect('java.lang.System','getProperty','user.name'))")  # fmt: skip
    for modifications, purge_filter, named in (
        ({"Carrier": payload}, None, r"modify.Carrier.*subquery.*REFLECT"),
        ({}, "Carrier = java_method('java.lang.System', 'exit', 0)", "purgeFilter.*JAVA_METHOD"),
        ({"Dest": "concat(Dest, '${env:HOME}')"}, None, r"modify.Dest.*\$\{"),
    ):  # fmt: skip
        spec = PurgeSpec.resolve("airlineStats_OFFLINE", purge_filter=purge_filter,
                                 modifications=modifications, record_purger=None,
                                 record_modifier=None)  # fmt: skip
        with pytest.raises(PurgeSpecError, match=named):
            purge_segment(spark, directory, schema, config, spec, tmp_path / "out", 1)
    assert not (tmp_path / "out" / "segments").exists()
    assert spark.conf.get("spark.sql.runSQLOnFiles") == "false"
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM text.`{secret}`").collect()
    assert spark.range(1).selectExpr("'${env:HOME}' AS v").first().v == "${env:HOME}"


def test_declared_purge_checks():
    columns = {"Carrier", "Dest"}
    check_declared_purge({"purgeFilter": "Carrier IN ('AA', 'DL')", "modify.Dest": "'X'"},
                         columns)  # fmt: skip
    with pytest.raises(TaskConfigError, match=r"PurgeTask.purgeFilter.*unknown column.*Nope"):
        check_declared_purge({"purgeFilter": "Nope = 1"}, columns)
    with pytest.raises(TaskConfigError, match=r"PurgeTask.purgeFilter.*not a SQL predicate"):
        check_declared_purge({"purgeFilter": "Carrier IN ("}, columns)
    with pytest.raises(TaskConfigError, match=r"PurgeTask.modify.Origin.*not a column"):
        check_declared_purge({"modify.Origin": "'X'"}, columns)
    generator = PurgeTaskGenerator()
    generator.validate({"tableName": "t_REALTIME"}, {})  # REALTIME tables are purged too
    with pytest.raises(TaskConfigError, match="lastPurgeTimeThresholdPeriod"):
        generator.validate({"tableName": "t_OFFLINE"}, {"lastPurgeTimeThresholdPeriod": "x"})


class _Store:
    def __init__(self, segments: dict[str, int | None]):
        self.segments = segments

    def schema(self, name):
        return {"dimensionFieldSpecs": [{"name": "Carrier"}]}

    def segment_names(self, table):
        return list(self.segments)

    def segment_metadata(self, table, segment):
        last = self.segments[segment]
        custom = orjson.dumps({PURGE_TIME_KEY: str(last)}).decode() if last is not None else None
        extra = {"custom.map": custom} if custom else {}
        return SimpleNamespace(extra=extra, download_url=f"http://c/segments/t/{segment}",
                               crc=f"crc-{segment}")  # fmt: skip


def test_generator_order_and_threshold():
    now = 100 * DAY_MS
    store = _Store({"fresh": now - DAY_MS, "old": now - 30 * DAY_MS, "older": now - 40 * DAY_MS,
                    "never": None, "busy": None})  # fmt: skip
    ctx = SimpleNamespace(store=store, table_name="t_OFFLINE", now_ms=now,
                          controller_url="http://c",
                          incomplete_subtask_configs=lambda: [{"segmentName": "busy"}])  # fmt: skip
    configs = PurgeTaskGenerator().generate(ctx, {"tableName": "t_OFFLINE"},
                                            {"purgeFilter": "Carrier = 'AA'"})  # fmt: skip
    assert [c["segmentName"] for c in configs] == ["never", "older", "old"]
    assert configs[0] == {"tableName": "t_OFFLINE", "segmentName": "never",
                          "downloadURL": "http://c/segments/t/never",
                          "uploadURL": "http://c/segments", "crc": "crc-never",
                          "purgeFilter": "Carrier = 'AA'"}  # fmt: skip
    weekly = PurgeTaskGenerator().generate(ctx, {"tableName": "t_OFFLINE"},
                                           {"lastPurgeTimeThresholdPeriod": "35d"})  # fmt: skip
    assert [c["segmentName"] for c in weekly] == ["never", "older"]


class _RealtimeStore(_Store):
    """LLC segments with their status, and the ideal state's CONSUMING ones."""

    def __init__(self, statuses: dict[str, str], consuming: set[str]):
        super().__init__(dict.fromkeys(statuses))
        self.statuses, self.consuming = statuses, consuming

    def segment_metadata(self, table, segment):
        metadata = super().segment_metadata(table, segment)
        metadata.extra["segment.realtime.status"] = self.statuses[segment]
        return metadata

    def ideal_state(self, table):
        return SimpleNamespace(segments={
            s: {"Server_1": "CONSUMING" if s in self.consuming else "ONLINE"}
            for s in self.statuses})  # fmt: skip


def test_generator_on_realtime_purges_completed_segments_only():
    names = {(p, q): f"t__{p}__{q}__20260101T0000Z" for p in (0, 1) for q in (0, 1, 2)}
    statuses = {name: "DONE" for name in names.values()}
    statuses[names[0, 2]] = "IN_PROGRESS"
    statuses[names[1, 2]] = "COMMITTING"
    # DONE in ZooKeeper, but the commit has not moved the ideal state yet
    consuming = {names[0, 2], names[1, 1], names[1, 2]}
    ctx = SimpleNamespace(store=_RealtimeStore(statuses, consuming), table_name="t_REALTIME",
                          now_ms=DAY_MS, controller_url="http://c",
                          incomplete_subtask_configs=lambda: [])  # fmt: skip
    configs = PurgeTaskGenerator().generate(ctx, {"tableName": "t_REALTIME"},
                                            {"purgeFilter": "Carrier = 'AA'"})  # fmt: skip
    assert sorted(c["segmentName"] for c in configs) == sorted(
        [names[0, 0], names[0, 1], names[1, 0]]
    )
    # each partition's newest completed segment is kept even when nothing is left in it
    keep = {c["segmentName"] for c in configs if c.get("keepEmptySegment") == "true"}
    assert keep == {names[0, 1], names[1, 0]}


def test_a_segment_changed_or_gone_meanwhile_is_not_replaced():
    from tasks.errors import SubtaskFailedError
    from tasks.executors.purge import check_unchanged

    assert check_unchanged("s", "11", "11") is True
    assert check_unchanged("s", None, "11") is True  # a subtask generated without a CRC
    assert check_unchanged("s", "11", None) is False  # deleted meanwhile (e.g. retention)
    with pytest.raises(SubtaskFailedError, match=r"segment s changed while it was purged"):
        check_unchanged("s", "11", "12")  # refreshed meanwhile: the purge would undo it
