"""The query state a process owns: settings read once (bad values named), the plan cache, and
the decoded-column cache, each belonging to one QueryEngine rather than to the module."""

from __future__ import annotations

import pytest

from engine.common.errors import ConfigError
from engine.query.plan import ColumnInfo
from engine.query.plan_cache import PlanCache
from engine.query.runner import QueryEngine
from engine.query.settings import DEFAULT_DECODED_CACHE_BYTES, QuerySettings

COLUMNS = {"a": ColumnInfo("INT", True), "s": ColumnInfo("STRING", True)}


def test_settings_from_the_environment_with_defaults_for_what_is_unset():
    settings = QuerySettings.from_env(
        {"SPRIG_QUERY_THREADS": "4", "SPRIG_PARALLEL_MIN_SEGMENT_MS": "0.5"}
    )
    assert settings == QuerySettings(threads=4, parallel_min_segment_ms=0.5)
    assert QuerySettings.from_env({}).decoded_cache_bytes == DEFAULT_DECODED_CACHE_BYTES
    assert QuerySettings.from_env({"SPRIG_QUERY_THREADS": " "}).threads == 2


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"SPRIG_QUERY_THREADS": "two"}, "SPRIG_QUERY_THREADS"),
        ({"SPRIG_QUERY_THREADS": "0"}, "SPRIG_QUERY_THREADS"),
        ({"SPRIG_PARALLEL_MIN_SEGMENT_MS": "-1"}, "SPRIG_PARALLEL_MIN_SEGMENT_MS"),
        ({"SPRIG_QUERY_CACHE_BYTES": "4GiB"}, "SPRIG_QUERY_CACHE_BYTES"),
    ],
)
def test_a_bad_setting_names_its_variable(env, named):
    with pytest.raises(ConfigError) as err:
        QuerySettings.from_env(env)
    assert err.value.field == named and named in str(err.value)


def test_the_plan_cache_returns_the_same_plan_for_the_same_query():
    cache = PlanCache(size=2)
    plan = cache.compile("SELECT a FROM t", COLUMNS)
    assert cache.compile("SELECT a FROM t", COLUMNS) is plan
    # another schema object with the same columns still hits
    assert cache.compile("SELECT a FROM t", dict(COLUMNS)) is plan
    # options are part of the key and override the query's own
    limited = cache.compile("SELECT a FROM t", COLUMNS, {"timeoutMs": "5"})
    assert limited is not plan and limited.options["timeoutMs"] == "5"


def test_the_plan_cache_keeps_at_most_size_plans():
    cache = PlanCache(size=2)
    first = cache.compile("SELECT a FROM t", COLUMNS)
    cache.compile("SELECT s FROM t", COLUMNS)
    cache.compile("SELECT a, s FROM t", COLUMNS)
    assert cache.compile("SELECT a FROM t", COLUMNS) is not first  # evicted, compiled again
    with pytest.raises(ValueError, match="size=0"):
        PlanCache(size=0)


def test_each_engine_owns_its_caches(synth):
    _, schema, _, three = synth
    one, two = QueryEngine(QuerySettings(threads=1)), QueryEngine(QuerySettings(threads=1))
    sql = "SELECT COUNT(*) FROM synth WHERE country = 'US'"
    assert one.run(sql, three, table_schema=schema)["exceptions"] == []
    assert one.decoded.used > 0 and two.decoded.used == 0
    assert one.segment_cost_ms(sql) is not None and two.segment_cost_ms(sql) is None
    for segment in three:
        one.forget_segment(segment)
    assert one.decoded.used == 0


def test_a_one_thread_engine_never_starts_a_pool(synth):
    _, schema, _, three = synth
    engine = QueryEngine(QuerySettings(threads=1, parallel_min_segment_ms=0))
    response = engine.run("SELECT COUNT(*) FROM synth", three, table_schema=schema)
    assert response["exceptions"] == [] and engine._pool is None
