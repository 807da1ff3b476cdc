"""The single-stage engine's aggregations in the operators: percentiles, HLL and theta
sketches, SKEWNESS, FIRSTWITHTIME ... above a join or a subquery, where no leaf stage can
run them, as DataFusion aggregate UDFs over the single-stage engine's own functions
(``engine.query.aggregation``), so they mean the same in both engines.

A UDAF is declared per call site: its Pinot call over positional columns (``PERCENTILE("$0",
50)``: literal arguments stay in it), the Arrow types of its column arguments and its
result type. Each group's accumulator keeps the function's state; partial states travel
inside DataFusion as one binary value (the state's Arrow columns as an IPC stream). Rows
whose arguments are NULL are skipped, and an aggregation of no value is NULL (COUNT-like
ones 0), as with ``enableNullHandling``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import Accumulator, SessionContext, udaf

from engine.query.aggregation import AggregationFunction, ValueBlock, with_null_handling
from engine.query.plan import compile_query

KIND = "aggregate"


@dataclasses.dataclass(frozen=True)
class UdafSpec:
    name: str  # the DataFusion name of this call site's UDAF
    call: str  # the Pinot call over "$0", "$1" ... (its column arguments, in order)
    arg_types: tuple[str, ...]  # Arrow types (str) of the column arguments
    return_type: str  # Arrow type (str)

    def to_json(self) -> dict:
        return {**dataclasses.asdict(self), "kind": KIND}

    @classmethod
    def from_json(cls, data: dict) -> UdafSpec:
        return cls(data["name"], data["call"], tuple(data["arg_types"]), data["return_type"])

    def function(self) -> AggregationFunction:
        """The single-stage function, null-aware."""
        (fn,) = compile_query(f"SELECT {self.call} FROM t").aggregations
        return with_null_handling([fn.plain], True)[0]


def result_type(call: str) -> str:
    """The Pinot result type of an aggregation call."""
    (fn,) = compile_query(f"SELECT {call} FROM t").aggregations
    return fn.result_type


def register_aggregate(ctx: SessionContext, spec: UdafSpec, parse_type) -> None:
    fn = spec.function()
    out = parse_type(spec.return_type)
    ctx.register_udaf(udaf(lambda: _Accumulator(fn, out), [parse_type(t) for t in spec.arg_types],
                           out, [pa.binary()], "immutable", spec.name))  # fmt: skip


class _Accumulator(Accumulator):
    def __init__(self, fn: AggregationFunction, out: pa.DataType) -> None:
        self.fn = fn
        self.out = out
        self.current: tuple | None = None

    def update(self, *arrays: pa.Array) -> None:
        valid = None
        for array in arrays:
            if array.null_count:
                mask = pc.is_valid(array)
                valid = mask if valid is None else pc.and_(valid, mask)
        if valid is not None:
            arrays = tuple(pc.filter(a, valid) for a in arrays)
        n = len(arrays[0]) if arrays else 0
        if not n:
            return
        values = [_numpy(a) for a in arrays]
        block = ValueBlock(n, raw=values[0], times=values[1] if len(values) > 1 else None)
        self._add(self.fn.aggregate(block, None, 1))

    def merge(self, states: list[pa.Array]) -> None:
        for blob in states[0].to_pylist():
            if blob is not None:
                self._add(_decode(self.fn, blob))

    def state(self) -> list[pa.Scalar]:
        return [pa.scalar(_encode(self.fn, self._state()), pa.binary())]

    def evaluate(self) -> pa.Scalar:
        state = self._state()
        nulls = self.fn.finalize_nulls(state)
        if nulls is not None and bool(nulls[0]):
            return pa.scalar(None, self.out)
        value = self.fn.finalize(state)[0]
        return pa.scalar(value.item() if isinstance(value, np.generic) else value, self.out)

    def _add(self, state: tuple) -> None:
        self.current = state if self.current is None else self.fn.merge_one([self.current, state])

    def _state(self) -> tuple:
        return self.current if self.current is not None else self.fn.empty_state(1)


def _numpy(array: pa.Array) -> np.ndarray:
    if pa.types.is_timestamp(array.type):
        array = array.cast(pa.int64())
    if pa.types.is_decimal(array.type):
        array = array.cast(pa.float64())
    if pa.types.is_string(array.type) or pa.types.is_binary(array.type):
        return np.array(array.to_pylist(), dtype=object)
    return array.to_numpy(zero_copy_only=False)


def _encode(fn: AggregationFunction, state: tuple) -> bytes:
    columns = fn.to_arrow(state)
    batch = pa.RecordBatch.from_arrays(columns, names=[f"s{i}" for i in range(len(columns))])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _decode(fn: AggregationFunction, blob: bytes) -> tuple:
    batch = pa.ipc.open_stream(blob).read_next_batch()
    return fn.from_arrow(list(batch.columns))
