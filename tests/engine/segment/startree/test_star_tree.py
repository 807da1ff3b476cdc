"""Star-tree aggregates equal brute-force group-bys."""

import collections
import itertools

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.common.errors import SegmentError
from engine.segment import build_segment, load_segment
from engine.segment.startree import STAR
from tests.engine.conftest import make_schema, make_table_config

SCHEMA = make_schema(
    dimensions=[
        {"name": "a", "dataType": "STRING"},
        {"name": "b", "dataType": "INT"},
        {"name": "c", "dataType": "INT"},
        {"name": "tags", "dataType": "INT", "singleValueField": False},
    ],
    metrics=[{"name": "m", "dataType": "DOUBLE"}, {"name": "k", "dataType": "LONG"}],
)
PAIRS = [
    "COUNT__*",
    "SUM__m",
    "MIN__m",
    "MAX__k",
    "AVG__k",
    "MINMAXRANGE__m",
    "SUMMV__tags",
    "COUNTMV__tags",
]


def config(max_leaf: int, skip=()):
    return make_table_config(
        SCHEMA,
        tableIndexConfig={
            "noDictionaryColumns": ["k"],
            "starTreeIndexConfigs": [
                {
                    "dimensionsSplitOrder": ["a", "b", "c"],
                    "skipStarNodeCreationForDimensions": list(skip),
                    "functionColumnPairs": PAIRS,
                    "maxLeafRecords": max_leaf,
                }
            ],
        },
    )


@st.composite
def tables(draw):
    n = draw(st.integers(1, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cards = [draw(st.integers(1, 6)) for _ in range(3)]
    return pa.table(
        {
            "a": [f"x{v}" for v in rng.integers(0, cards[0], n)],
            "b": rng.integers(0, cards[1], n).astype(np.int32),
            "c": rng.integers(0, cards[2], n).astype(np.int32),
            "tags": [list(rng.integers(0, 9, k)) for k in rng.integers(1, 4, n)],
            "m": np.round(rng.normal(0, 5, n), 2),
            "k": rng.integers(-20, 20, n),
        }
    )


def brute_force(segment, predicates, group_by):
    ids = {d: segment.column(d).dict_ids().astype(np.int64) for d in ("a", "b", "c")}
    m, k = segment.column("m").values(), segment.column("k").values()
    offsets, tags = segment.column("tags").values()
    groups = collections.defaultdict(list)
    for doc in range(segment.total_docs):
        if all(ids[d][doc] in allowed for d, allowed in predicates.items()):
            groups[tuple(int(ids[d][doc]) for d in group_by)].append(doc)
    out = {}
    for key, docs in groups.items():
        docs = np.array(docs)
        mv = np.concatenate([tags[offsets[d] : offsets[d + 1]] for d in docs]).astype(float)
        out[key] = {
            "COUNT__*": len(docs),
            "SUM__m": m[docs].sum(),
            "MIN__m": m[docs].min(),
            "MAX__k": k[docs].max(),
            "AVG__k": k[docs].mean(),
            "MINMAXRANGE__m": m[docs].max() - m[docs].min(),
            "SUMMV__tags": mv.sum(),
            "COUNTMV__tags": len(mv),
        }
    return out


def from_star_tree(tree, predicates, group_by):
    recs = tree.matching_records(predicates, group_by)
    keys = [tuple(int(tree.dimension(d)[r]) for d in group_by) for r in recs]
    out = {}
    for key in set(keys):
        sel = recs[[kk == key for kk in keys]]
        count = tree.metric("COUNT__*")[sel].sum()
        out[key] = {
            "COUNT__*": count,
            "SUM__m": tree.metric("SUM__m")[sel].sum(),
            "MIN__m": tree.metric("MIN__m")[sel].min(),
            "MAX__k": tree.metric("MAX__k")[sel].max(),
            "AVG__k": tree.metric("AVG__k", "sum")[sel].sum()
            / tree.metric("AVG__k", "count")[sel].sum(),
            "MINMAXRANGE__m": tree.metric("MINMAXRANGE__m", "max")[sel].max()
            - tree.metric("MINMAXRANGE__m", "min")[sel].min(),
            "SUMMV__tags": tree.metric("SUMMV__tags")[sel].sum(),
            "COUNTMV__tags": tree.metric("COUNTMV__tags")[sel].sum(),
        }
    return out


def assert_same(got, want):
    assert set(got) == set(want)
    for key, aggs in want.items():
        for name, value in aggs.items():
            assert got[key][name] == pytest.approx(value), (key, name)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    table=tables(),
    max_leaf=st.sampled_from([1, 3, 10, 1000]),
    skip=st.sampled_from([(), ("b",)]),
    data=st.data(),
)
def test_star_tree_matches_brute_force(tmp_path_factory, table, max_leaf, skip, data):
    segment = load_segment(
        build_segment(table, SCHEMA, config(max_leaf, skip), tmp_path_factory.mktemp("s")).path
    )
    tree = segment.star_trees[0]
    assert tree.num_records >= 1
    dims = ["a", "b", "c"]
    for size in range(0, 3):
        for group_by in itertools.combinations(dims, size):
            filtered = data.draw(st.sampled_from(dims))
            card = len(segment.column(filtered).dictionary)
            allowed = set(data.draw(st.lists(st.integers(0, card), min_size=1, max_size=2)))
            for predicates in ({}, {filtered: allowed}):
                assert_same(
                    from_star_tree(tree, predicates, list(group_by)),
                    brute_force(segment, predicates, list(group_by)),
                )


def test_tree_structure_follows_pinot_rules(tmp_path):
    rng = np.random.default_rng(7)
    n = 500
    table = pa.table(
        {
            "a": [f"x{v}" for v in rng.integers(0, 3, n)],
            "b": rng.integers(0, 4, n).astype(np.int32),
            "c": rng.integers(0, 5, n).astype(np.int32),
            "tags": [[1]] * n,
            "m": rng.normal(size=n),
            "k": rng.integers(0, 9, n),
        }
    )
    segment = load_segment(
        build_segment(table, SCHEMA, config(max_leaf=5, skip=("b",)), tmp_path).path
    )
    tree = segment.star_trees[0]
    assert (tree.dimensions_split_order, tree.max_leaf_records) == (["a", "b", "c"], 5)
    root = tree.root
    assert root.dimension == "a" and not root.is_leaf
    assert [child.value for child in root.children] == [0, 1, 2]
    assert root.star_child is not None and root.star_child.value == STAR
    assert all(
        tree.dimension("a")[root.star_child.start_record : root.star_child.end_record] == STAR
    )
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_leaf:
            assert node.end_record - node.start_record <= 5 or node.level == 3
            continue
        assert node.end_record - node.start_record > 5
        if node.dimension == "b":
            assert node.star_child is None  # skipStarNodeCreationForDimensions
        for child in node.children:
            assert node.child(child.value).index == child.index
            stack.append(child)
        if node.star_child:
            stack.append(node.star_child)
    assert tree.metric("COUNT__*")[tree.matching_records({})].sum() == n
    with pytest.raises(SegmentError):
        tree.matching_records({"tags": [1]})
    with pytest.raises(SegmentError):
        tree.metric("AVG__k")


def test_default_star_tree(tmp_path):
    table = pa.table(
        {
            "a": ["x", "y", "x"],
            "b": [1, 2, 1],
            "c": [5, 5, 5],
            "tags": [[1], [2], [3]],
            "m": [1.0, 2.0, 3.0],
            "k": [1, 2, 3],
        }
    )
    cfg = make_table_config(SCHEMA, tableIndexConfig={"enableDefaultStarTree": True})
    tree = load_segment(build_segment(table, SCHEMA, cfg, tmp_path).path).star_trees[0]
    assert set(tree.dimensions_split_order) == {"a", "b", "c"}
    assert tree.function_column_pairs == ["COUNT__*", "SUM__m", "SUM__k"]
    assert tree.max_leaf_records == 10_000
