import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.common.types import DataType
from engine.segment.dictionary import Dictionary, encode


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.text(max_size=4), min_size=1, max_size=60),
    probe=st.text(max_size=4),
    other=st.text(max_size=4),
    inclusive=st.tuples(st.booleans(), st.booleans()),
)
def test_string_dictionary_matches_python_order(values, probe, other, inclusive):
    sorted_values, ids = encode(pa.array(values))
    dictionary = Dictionary(DataType.STRING, sorted_values)
    distinct = sorted(set(values))
    assert sorted_values.to_pylist() == distinct
    assert [distinct[i] for i in ids] == values
    assert ids.dtype == np.uint8
    assert dictionary.index_of(probe) == (distinct.index(probe) if probe in distinct else -1)
    lo, hi = sorted([probe, other])
    start, end = dictionary.id_range(lo, hi, *inclusive)
    want = [
        v
        for v in distinct
        if (v >= lo if inclusive[0] else v > lo) and (v <= hi if inclusive[1] else v < hi)
    ]
    assert distinct[start:end] == want


@settings(max_examples=40, deadline=None)
@given(
    values=st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=300),
    probe=st.integers(-(2**31), 2**31 - 1),
)
def test_int_dictionary(values, probe):
    sorted_values, ids = encode(pa.array(values, pa.int32()))
    dictionary = Dictionary(DataType.INT, sorted_values.to_numpy())
    distinct = sorted(set(values))
    assert [distinct[i] for i in ids] == values
    assert dictionary.index_of(probe) == (distinct.index(probe) if probe in distinct else -1)
    assert dictionary.index_of(None) == -1
    start, end = dictionary.id_range(None, probe, True, False)
    assert distinct[start:end] == [v for v in distinct if v < probe]
