"""A filter predicate's dictionary ids and index doc set are kept per segment in the engine's
decoded cache: repeated and different predicates answer exactly as when resolved afresh."""

from __future__ import annotations

import numpy as np
import pytest
from pyroaring import BitMap

from engine.query.decoded_cache import DecodedCache, MemoKey, _nbytes
from engine.query.docset import DocSet
from engine.query.runner import QueryEngine
from engine.query.settings import QuerySettings

PREDICATES = [
    "country = 'US'",  # sorted column
    "country = 'IN'",
    "country <> 'US'",
    "country NOT IN ('US', 'BR')",
    "site = 7",  # inverted index
    "site IN (3, 7, 11)",
    "site <> 7",
    "site NOT IN (3, 7)",
    "site = 12345",  # not in the dictionary
    "country = 'US' AND site = 7",
    "clicks BETWEEN 3 AND 9",  # range index on a dictionary column
    "UPPER(country) = 'DE'",  # an expression: evaluated over the dictionary
    "tags = 'a'",  # MV with an inverted index
]


def _count(engine: QueryEngine, schema, segments, where: str) -> int:
    sql = f"SELECT COUNT(*) FROM synth WHERE {where}"
    # off the star-tree, which would answer most of these COUNT(*)s without the filter
    options = {"useStarTree": "false"}
    response = engine.run(sql, segments, table_schema=schema, query_options=options)
    assert response["exceptions"] == [], response["exceptions"]
    return response["resultTable"]["rows"][0][0]


def _expected(rows: dict, where: str) -> int:
    country, site = np.array(rows["country"]), np.array(rows["site"])
    clicks = np.array(rows["clicks"])
    masks = {
        "country = 'US'": country == "US",
        "country = 'IN'": country == "IN",
        "country <> 'US'": country != "US",
        "country NOT IN ('US', 'BR')": ~np.isin(country, ["US", "BR"]),
        "site = 7": site == 7,
        "site IN (3, 7, 11)": np.isin(site, [3, 7, 11]),
        "site <> 7": site != 7,
        "site NOT IN (3, 7)": ~np.isin(site, [3, 7]),
        "site = 12345": site == 12345,
        "country = 'US' AND site = 7": (country == "US") & (site == 7),
        "clicks BETWEEN 3 AND 9": (clicks >= 3) & (clicks <= 9),
        "UPPER(country) = 'DE'": country == "DE",
        "tags = 'a'": np.array(["a" in t for t in rows["tags"]]),
    }
    return int(np.count_nonzero(masks[where]))


def _kind(key) -> str:
    """What a decoded-cache entry holds: the first part of its key."""
    return key.parts[0] if isinstance(key, MemoKey) else key[0]


def test_repeated_predicates_answer_as_resolved_afresh(synth):
    rows, schema, _, three = synth
    engine = QueryEngine(QuerySettings(threads=1))
    for _ in range(3):  # first run resolves and keeps, the next ones reuse
        for where in PREDICATES:
            assert _count(engine, schema, three, where) == _expected(rows, where), where
    kept = {_kind(key[1]) for key in engine.decoded._entries}
    assert {"match", "docs"} <= kept


def test_kept_doc_sets_are_read_only(synth):
    _, schema, single, _ = synth
    engine = QueryEngine(QuerySettings(threads=1))
    # two sorted-column ranges apart: a mask; off the star-tree, which would answer COUNT(*)
    where = "country IN ('BR', 'US')"
    sql = f"SELECT COUNT(*) FROM synth WHERE {where}"
    response = engine.run(sql, single, table_schema=schema, query_options={"useStarTree": "false"})
    assert response["exceptions"] == []
    docs = [v for k, v in engine.decoded._entries.items() if _kind(k[1]) == "docs"]
    masks = [d.mask for d in docs if d.mask is not None]
    assert masks
    for mask in masks:
        with pytest.raises(ValueError, match="read-only"):
            mask[0] = not mask[0]


def test_a_kept_bitmap_counts_its_bytes_against_the_budget():
    bitmap = BitMap(np.arange(0, 1_000_000, 3, dtype=np.uint32))
    size = _nbytes(DocSet.of_bitmap(1_000_000, bitmap))
    assert size > 100_000  # the containers' bytes, not a flat guess
    cache = DecodedCache(budget_bytes=size // 2)

    class Segment:  # weak-referenceable stand-in
        pass

    segment = Segment()
    cache.put(segment, ("docs", "x"), DocSet.of_bitmap(1_000_000, bitmap))
    assert cache.get(segment, ("docs", "x")) is None  # larger than the budget: not kept
