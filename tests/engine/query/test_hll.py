"""DISTINCTCOUNTHLL and DISTINCTCOUNTRAWHLL: Pinot's HyperLogLog (stream-lib's hash and
registers, log2m 8 unless given) on vectorised registers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine.query import run_query
from engine.query.aggregation import ValueBlock, create_aggregation
from engine.query.aggregation.hll import estimate, hash32, register_updates, serialized
from engine.query.errors import QueryValidationError
from engine.query.expressions import Function, Identifier, Literal

RNG = np.random.default_rng(11)


def hll(*params):
    return create_aggregation(
        Function("distinctcounthll", (Identifier("x"), *(Literal(p) for p in params)))
    )


def _relative_error_bound(log2m: int) -> float:
    return 3 * 1.04 / np.sqrt(1 << log2m)  # three standard errors of HLL


@pytest.mark.parametrize("distinct", [1, 40, 900, 30_000, 250_000])
@pytest.mark.parametrize("log2m", [None, 12])
def test_estimate_is_within_sketch_error(distinct, log2m):
    values = RNG.choice(np.arange(10**9, 10**9 + 10 * distinct), distinct, replace=False)
    values = np.repeat(values, 3)  # duplicates must not count
    fn = hll(log2m) if log2m else hll()
    state = fn.aggregate(ValueBlock(len(values), raw=values), None, 1)
    assert state[0].shape == (1, 1 << (log2m or 8))  # Pinot's default log2m is 8
    got = fn.finalize(state)[0]
    assert abs(got - distinct) <= _relative_error_bound(log2m or 8) * distinct
    if distinct <= 40:
        assert abs(got - distinct) <= 1  # linear counting, nearly exact while registers are few


def test_groups_dictionary_ids_and_merge_agree():
    values = RNG.integers(0, 5_000, 60_000).astype(np.int32)
    groups = RNG.integers(0, 4, len(values))
    fn = hll(10)
    by_raw = fn.aggregate(ValueBlock(len(values), raw=values), groups, 4)
    dictionary, ids = np.unique(values, return_inverse=True)
    by_ids = fn.aggregate(ValueBlock(len(values), dict_ids=ids.reshape(-1), dictionary=dictionary), groups, 4)  # fmt: skip
    np.testing.assert_array_equal(by_raw[0], by_ids[0])
    ungrouped_ids = fn.aggregate(ValueBlock(len(values), dict_ids=ids.reshape(-1), dictionary=dictionary), None, 1)  # fmt: skip
    ungrouped_raw = fn.aggregate(ValueBlock(len(values), raw=values), None, 1)
    np.testing.assert_array_equal(ungrouped_ids[0], ungrouped_raw[0])
    np.testing.assert_array_equal(ungrouped_ids[0][0], by_raw[0].max(axis=0))
    whole = ValueBlock(len(values), dict_ids=ids.reshape(-1), dictionary=dictionary, whole_segment=True)  # fmt: skip
    np.testing.assert_array_equal(fn.aggregate(whole, None, 1)[0], ungrouped_raw[0])
    # four "segments" with local group ids, shipped through Arrow, then merged
    states, ids_seen = [], []
    for chunk in np.array_split(np.arange(len(values)), 4):
        local, inverse = np.unique(groups[chunk], return_inverse=True)
        state = fn.aggregate(ValueBlock(len(chunk), raw=values[chunk].astype(np.int64)), inverse, len(local))  # fmt: skip
        states.append(fn.from_arrow([pa.chunked_array([fn.to_arrow(state)[0]])]))
        ids_seen.append(local)
    merged = fn.merge(fn.concat_states(states), np.concatenate(ids_seen), 4)
    np.testing.assert_array_equal(merged[0], by_raw[0])  # max of registers: lossless merge
    exact = [len(np.unique(values[groups == g])) for g in range(4)]
    got = fn.finalize(merged)
    assert all(abs(g - e) <= _relative_error_bound(10) * e for g, e in zip(got, exact, strict=True))
    picked = fn.take(merged, np.array([2, 0]))
    np.testing.assert_array_equal(fn.finalize(picked), got[[2, 0]])


def test_strings_and_number_widths_hash_alike_across_segments():
    np.testing.assert_array_equal(hash32(np.array([7, -3], np.int32)), hash32(np.array([7, -3])))
    # Pinot hashes a FLOAT by its 32 raw bits, a DOUBLE by its 64: 1.5f and 1.5 differ
    assert hash32(np.array([1.5], np.float32))[0] != hash32(np.array([1.5]))[0]
    # text of every length class (the 0 to 3 tail bytes are signed in Java)
    texts = np.array(["", "a", "ab", "abc", "abcd", "é", "ab\xff"], dtype=object)
    assert len(set(hash32(texts).tolist())) == len(texts)
    words = np.array([f"user-{i}" for i in range(2_000)], dtype=object)
    fn = hll(12)
    got = fn.finalize(fn.aggregate(ValueBlock(len(words), raw=words), None, 1))[0]
    assert abs(got - 2_000) <= _relative_error_bound(12) * 2_000


def test_empty_groups_and_ranks():
    fn = hll()
    state = fn.aggregate(ValueBlock(0, raw=np.empty(0)), np.zeros(0, np.int64), 3)
    assert fn.finalize(state).tolist() == [0, 0, 0]
    assert fn.from_arrow(fn.to_arrow((state[0][:0],)))[0].shape == (0, 256)
    index, rank = register_updates(np.array([0, 1, 1 << 24, (255 << 24) | 8], np.uint32), 8)
    assert index.tolist() == [0, 0, 1, 255]
    # 1 + leading zeros of the low 24 bits shifted up, over a stop bit (offerHashed(int))
    assert rank.tolist() == [25, 24, 25, 21]
    assert estimate(np.zeros((1, 16), np.uint8)).tolist() == [0]


def test_raw_sketches_are_pinots_bytes():
    """Pinot's own expected outputs (CountDistinct.json): stream-lib's serialized HLL of
    the strings, to the bit, for log2m 2 and 8."""
    words = np.array(["foo", "foo", "bar", "baz"], dtype=object)
    raw = create_aggregation(Function("distinctcountrawhll", (Identifier("x"), Literal(2))))
    state = raw.aggregate(ValueBlock(len(words), raw=words), None, 1)
    assert raw.finalize(state).tolist() == ["000000020000000400000460"]
    assert raw.result_type == "STRING"
    two = hll().aggregate(ValueBlock(2, raw=np.array(["foo", "bar"], dtype=object)), None, 1)
    text = serialized(two[0])[0]
    assert text.startswith("00000008000000ac") and len(text) == 2 * (8 + 172)
    # every word zero but two: 97 and 142 hex digits into the registers
    assert text[16:].index("4") == 97 and text[16:].index("2") == 142
    assert text[16:].replace("4", "0", 1).replace("2", "0", 1) == "0" * (2 * 172)


@pytest.mark.parametrize("log2m", [0, 17, 8.5, "x"])
def test_bad_log2m_is_rejected(log2m):
    with pytest.raises(QueryValidationError, match="log2m"):
        hll(log2m).aggregate(ValueBlock(1, raw=np.array([1])), None, 1)


def test_whole_segments_hash_their_dictionaries_like_scanned_rows(synth):
    _, schema, single, three = synth
    counts = "DISTINCTCOUNTHLL(user), DISTINCTCOUNTHLL(site, 12), DISTINCTCOUNTHLL(country)"
    for segments in (single, three):
        whole = run_query(f"SELECT {counts} FROM synth", segments, table_schema=schema)
        # an expression filter that keeps every row, so the rows are read and deduplicated
        scanned = run_query(f"SELECT {counts} FROM synth WHERE user + 0 > -1", segments, table_schema=schema)  # fmt: skip
        assert whole["exceptions"] == [] and scanned["exceptions"] == []
        assert scanned["numEntriesScannedInFilter"] > 0
        assert whole["resultTable"]["rows"] == scanned["resultTable"]["rows"]
        assert whole["resultTable"]["rows"][0][2] == 6  # six countries: linear counting is exact
