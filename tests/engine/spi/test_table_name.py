"""A table name's type suffix, Pinot's TableNameBuilder rule, in its one home. The edge cases
pinned here are where the five former copies disagreed:

- a bare ``_OFFLINE``: the query planner's regex read it as the OFFLINE table with an empty
  raw name (Pinot's answer); the cluster-state copy read it as a raw table ``_OFFLINE``;
- two suffixes: the table config stripped both (``t_REALTIME_OFFLINE`` -> ``t``), Pinot and
  every other copy strip one;
- a config named with the other type's suffix (``t_REALTIME`` as an OFFLINE table): the table
  config and the Spark job's segment namer renamed it to ``t``; Pinot keeps the raw name
  ``t_REALTIME`` (resource ``t_REALTIME_OFFLINE``).
"""

from __future__ import annotations

import pytest

from engine.clusterstate import split_table_name as cluster_split
from engine.common.errors import ConfigError
from engine.query.plan import compile_query
from engine.spi import TableConfig
from engine.spi.table_name import (
    OFFLINE,
    REALTIME,
    raw_name_for_type,
    split_table_name,
    table_name_with_type,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("airlineStats_OFFLINE", ("airlineStats", OFFLINE)),
        ("airlineStats_REALTIME", ("airlineStats", REALTIME)),
        ("my_table", ("my_table", None)),
        ("t_offline", ("t_offline", None)),  # case-sensitive, as Pinot
        ("OFFLINE", ("OFFLINE", None)),  # no separator: a raw name
        ("_OFFLINE", ("", OFFLINE)),  # the cluster-state copy said ("_OFFLINE", None)
        ("_REALTIME", ("", REALTIME)),
        ("t_OFFLINE_REALTIME", ("t_OFFLINE", REALTIME)),  # stripped once
        ("t_REALTIME_OFFLINE", ("t_REALTIME", OFFLINE)),
        ("", ("", None)),
    ],
)
def test_split_table_name(name, expected):
    assert split_table_name(name) == expected


def test_every_caller_reads_the_one_rule():
    assert cluster_split is split_table_name
    plan = compile_query("SELECT COUNT(*) FROM _OFFLINE")
    assert (plan.raw_table, plan.table_type) == ("", OFFLINE)
    plan = compile_query("SELECT COUNT(*) FROM t_REALTIME_OFFLINE")
    assert (plan.raw_table, plan.table_type) == ("t_REALTIME", OFFLINE)


@pytest.mark.parametrize("raw", ["t", "my_table", "t_OFFLINE", "t_REALTIME", "t_offline", ""])
@pytest.mark.parametrize("table_type", [OFFLINE, REALTIME])
def test_with_type_and_split_are_inverse(raw, table_type):
    assert split_table_name(table_name_with_type(raw, table_type)) == (raw, table_type)


def test_with_type_takes_any_case_of_the_type():
    assert table_name_with_type("t", "offline") == "t_OFFLINE"


@pytest.mark.parametrize(
    ("name", "table_type", "raw"),
    [
        ("t", OFFLINE, "t"),
        ("t_OFFLINE", OFFLINE, "t"),
        ("t_REALTIME", REALTIME, "t"),
        ("t_REALTIME", OFFLINE, "t_REALTIME"),  # the table config said "t"
        ("t_REALTIME_OFFLINE", OFFLINE, "t_REALTIME"),  # the table config said "t"
        ("t_OFFLINE_OFFLINE", OFFLINE, "t_OFFLINE"),
        ("_REALTIME", OFFLINE, "_REALTIME"),
    ],
)
def test_raw_name_for_type(name, table_type, raw):
    assert raw_name_for_type(name, table_type) == raw


def _config(name: str, table_type: str = OFFLINE) -> dict:
    return {"tableName": name, "tableType": table_type, "segmentsConfig": {}}


def test_table_config_keeps_the_other_types_suffix_in_its_raw_name():
    config = TableConfig.from_json(_config("t_REALTIME"))
    assert (config.table_name, config.table_name_with_type) == ("t_REALTIME", "t_REALTIME_OFFLINE")
    assert split_table_name(config.table_name_with_type) == (config.table_name, OFFLINE)


@pytest.mark.parametrize("name", ["_OFFLINE", " _OFFLINE"])
def test_a_config_with_no_raw_name_is_refused(name):
    with pytest.raises(ConfigError) as refused:
        TableConfig.from_json(_config(name))
    assert refused.value.field == "tableName"
    assert "nothing comes before its _OFFLINE suffix" in refused.value.message
