"""Dynamic filters in the leaf: the docs ``narrow`` keeps, whether it reads a column's
postings (selective keys) or passes over every doc, equal a plain numpy reference."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.multistage import leaf
from engine.multistage.leaf import KeySet, filter_plan, narrow, scan
from engine.query.plan import compile_query
from engine.query.segment_view import SegmentView
from engine.segment import build_segment, load_segment
from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig

ROWS = 20_000


@pytest.fixture(scope="module")
def segment(tmp_path_factory):
    rng = np.random.default_rng(7)
    rows = pa.table({
        "k": pa.array(rng.integers(0, 3_000, ROWS), pa.int32()),
        "s": pa.array([f"c{i}" for i in rng.integers(0, 250, ROWS)]),
    })  # fmt: skip
    schema = Schema.from_json({"schemaName": "t", "dimensionFieldSpecs": [
        {"name": "k", "dataType": "INT"}, {"name": "s", "dataType": "STRING"}]})  # fmt: skip
    config = TableConfig.from_json({"tableName": "t", "tableType": "OFFLINE"})
    built = build_segment(rows, schema, config, tmp_path_factory.mktemp("narrow"))
    return load_segment(built.path), rows


@pytest.mark.parametrize("share", [0.0, 1.0])  # never / always through the postings
@pytest.mark.parametrize("start_docs", ["all", "range", "ids"])
@pytest.mark.parametrize("selectivity", [0.0005, 0.01, 0.3])
def test_narrowed_docs_equal_reference(segment, monkeypatch, share, start_docs, selectivity):
    monkeypatch.setattr(leaf, "POSTINGS_SHARE", share)
    seg, rows = segment
    rng = np.random.default_rng(int(selectivity * 1e4))
    keys_k = rng.choice(3_000, max(1, int(3_000 * selectivity)), replace=False)
    keys_k = pa.array([-5, *keys_k, 9_000], pa.int64())  # keys outside the dictionary too
    keys_s = pa.array([f"c{i}" for i in range(0, 250, 2)] + ["absent"])
    k, s = rows.column("k").to_numpy(), np.array(rows.column("s").to_pylist())
    expected = np.isin(k, keys_k.to_numpy()) & np.isin(s, keys_s.to_pylist())
    docs = {"all": None, "range": slice(1_000, 15_000),
            "ids": np.arange(0, ROWS, 3, dtype=np.int64)}[start_docs]  # fmt: skip
    inside = np.zeros(ROWS, dtype=bool)
    inside[np.arange(ROWS) if docs is None else docs] = True
    want = np.flatnonzero(expected & inside)
    count = ROWS if docs is None else len(np.arange(ROWS)[docs])
    got, matched, _ = narrow(SegmentView(seg, None), docs, count,
                             [("k", KeySet(keys_k)), ("s", KeySet(keys_s))])  # fmt: skip
    assert matched == len(want)
    np.testing.assert_array_equal(np.arange(ROWS)[got] if isinstance(got, slice) else got, want)


def _compile(sql, schema, options):
    return dataclasses.replace(compile_query(sql, schema), options=options)


@pytest.mark.parametrize("selectivity", [0.001, 0.5])
def test_scan_skips_the_leaf_filter_only_for_few_posted_docs(segment, selectivity):
    """A dynamic filter whose postings keep few docs is read first and the leaf's filter
    (also applied above the leaf) is not evaluated: the rows are those of the keys, a
    superset of the filter's; otherwise the rows pass both."""
    seg, rows = segment
    keys = pa.array(np.arange(0, int(3_000 * selectivity)), pa.int64())
    plan = filter_plan(_compile, "t", ["k", "s"], "s < 'c5'", None, {})
    schema = pa.schema([("k", pa.int32()), ("s", pa.string())])
    got, _ = scan(plan, [seg], ["k", "s"], schema, None, time.monotonic() + 30,
                  dynamic=[("k", KeySet(keys))])  # fmt: skip
    k, s = rows.column("k").to_numpy(), np.array(rows.column("s").to_pylist())
    in_keys = np.isin(k, keys.to_numpy())
    want = in_keys if selectivity < leaf.POSTINGS_SHARE else in_keys & (s < "c5")
    assert sorted(got.column("k").to_pylist()) == sorted(k[want].tolist())
    assert pc.all(pc.is_in(got.column("k"), value_set=keys.cast(pa.int32()))).as_py()
