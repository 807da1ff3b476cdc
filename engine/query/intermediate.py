"""What a server sends a broker: the combined, not yet finalized result of one query over a
set of segments (Pinot's DataTable).

* selection: ``rows`` (an Arrow table; select expressions first, then ORDER BY keys);
* aggregation: one state per aggregation (a single group);
* group_by: ``keys`` (one array per GROUP BY expression) and per-aggregation states.

``to_bytes`` writes one Arrow IPC stream whose schema metadata carries the kind, the stats
and the exceptions as JSON; sketches travel as binary columns. A result whose keys and states
are all numeric arrays (most aggregations and many group-bys) is written as a numeric frame
instead (``engine.query.numeric_frame``): the same JSON and the arrays' bytes, several times
cheaper to write and read than Arrow for the small results of selective queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import itemgetter

import numpy as np
import orjson
import pyarrow as pa

from engine.query import numeric_frame
from engine.query.errors import QueryExecutionError

STAT_KEYS = (
    "numDocsScanned", "numEntriesScannedInFilter", "numEntriesScannedPostFilter",
    "numSegmentsQueried", "numSegmentsProcessed", "numSegmentsMatched",
    "numConsumingSegmentsQueried", "totalDocs",
)  # fmt: skip


# the IPC stream's end: a continuation marker and a zero length
_END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def _read_stream(data: bytes) -> tuple[pa.Schema, list[pa.RecordBatch]]:
    """The schema and batches of an Arrow IPC stream, read message by message (a stream
    reader's set-up costs more than the reading of a small result)."""
    if not data.endswith(_END_OF_STREAM):
        # a stream cut at a message boundary would otherwise read as fewer rows or groups
        raise pa.ArrowInvalid("the stream has no end-of-stream marker: it was cut short")
    source = pa.BufferReader(pa.py_buffer(data))
    try:
        schema = pa.ipc.read_schema(pa.ipc.read_message(source))
    except EOFError as err:
        raise pa.ArrowInvalid("the stream ends before its schema") from err
    batches = []
    while True:
        try:
            message = pa.ipc.read_message(source)
        except EOFError:  # the end-of-stream marker, or no more bytes
            break
        if message.type != "record batch":
            raise pa.ArrowInvalid(f"unexpected {message.type} message in the result stream")
        batches.append(pa.ipc.read_record_batch(message, schema))
    return schema, batches


# not added up when merged (see ``merged_freshness``): how fresh the rows of the consuming
# segments queried are (epoch ms), 0 when unknown (Pinot's minConsumingFreshnessTimeMs)
FRESHNESS_KEY = "minConsumingFreshnessTimeMs"
CONSUMING_KEY = "numConsumingSegmentsQueried"


def empty_stats() -> dict[str, int]:
    return dict.fromkeys((*STAT_KEYS, FRESHNESS_KEY), 0)


_STAT_VALUES = itemgetter(*STAT_KEYS)


def merge_stats(parts: list[dict]) -> dict[str, int]:
    """The stats of several results as one: counts added, the freshness merged by
    ``merged_freshness``."""
    try:  # every result's stats hold every key (``empty_stats``): add them column by column
        totals = [sum(column) for column in zip(*map(_STAT_VALUES, parts), strict=True)]
    except (KeyError, TypeError):  # not all keys, or a peer's odd value: one by one
        totals = []
    if len(totals) == len(STAT_KEYS):
        stats = dict(zip(STAT_KEYS, totals, strict=True))
    else:  # (also no parts at all)
        stats = dict.fromkeys(STAT_KEYS, 0)
        for part in parts:
            for key in STAT_KEYS:
                stats[key] += int(part.get(key, 0))
    stats[FRESHNESS_KEY] = merged_freshness(parts)
    return stats


def merged_freshness(parts: list[dict]) -> int:
    """The freshness of several results as one (epoch ms, 0 when none is known): the oldest
    of those that queried a consuming segment. A result that queried none (a server that
    answered for committed segments only) reports a stand-in, the newest of their creation
    or end times, which says nothing of the stream: it counts only when no result queried a
    consuming segment, and then the latest of them counts, as on one server."""
    consuming = [p for p in parts if int(p.get(CONSUMING_KEY) or 0) > 0]
    fresh = [int(p.get(FRESHNESS_KEY) or 0) for p in (consuming or parts)]
    fresh = [f for f in fresh if f > 0]
    if not fresh:
        return 0
    return min(fresh) if consuming else max(fresh)


def _key_nulls(num_keys: int, null_keys: list[int], marks: list) -> list | None:
    """Each key's NULL marks (None for a key without NULL), from the marked keys' arrays."""
    if not null_keys:
        return None
    out: list = [None] * num_keys
    for position, array in zip(null_keys, marks, strict=True):
        out[position] = np.asarray(array, dtype=bool)
    return out


@dataclass
class IntermediateResult:
    kind: str  # "selection" | "aggregation" | "group_by"
    stats: dict[str, int] = field(default_factory=empty_stats)
    num_groups_limit_reached: bool = False
    exceptions: list[dict] = field(default_factory=list)
    rows: pa.Table | None = None
    keys: list[np.ndarray] | None = None
    # with null handling, the NULL mark of each group per key (None: that key has no NULL)
    key_nulls: list[np.ndarray | None] | None = None
    states: list[tuple] | None = None
    # Arrow columns of states not yet decoded (after from_bytes); decoded with the plan.
    encoded_states: list[list[pa.Array]] | None = None
    # operator timings of a traced query (``engine.query.trace``); None when not traced
    trace: dict | None = None

    @property
    def num_groups(self) -> int:
        if self.keys is None:
            return 1 if self.states is not None or self.encoded_states is not None else 0
        return len(self.keys[0]) if self.keys else 0

    def decoded_states(self, plan) -> list[tuple] | None:
        if self.states is None and self.encoded_states is not None:
            self.states = [
                fn.from_arrow(cols)
                for fn, cols in zip(plan.aggregations, self.encoded_states, strict=True)
            ]
            self.encoded_states = None
        return self.states

    # ---- transport ---------------------------------------------------------------------
    def to_bytes(self, plan) -> bytes:
        """Serialize: a numeric frame (``engine.query.numeric_frame``) when the keys and
        states are all numeric arrays that travel as they are, else an Arrow IPC stream.
        ``plan`` supplies each aggregation's state codec."""
        if self.kind != "selection":
            frame = self._numeric_frame(plan)
            if frame is not None:
                return frame
        names: list[str] = []
        arrays: list[pa.Array] = []
        layout: list[int] = []
        if not (self.kind == "selection" and self.rows is not None):
            for i, key in enumerate(self.keys or []):
                names.append(f"k{i}")
                arrays.append(pa.array(key))
            for i, marks in self._marked_keys():
                names.append(f"kn{i}")
                arrays.append(pa.array(marks))
            for i, (fn, state) in enumerate(
                zip(plan.aggregations, self.decoded_states(plan) or [], strict=True)
            ):
                parts = fn.to_arrow(state)
                layout.append(len(parts))
                for j, part in enumerate(parts):
                    names.append(f"a{i}_{j}")
                    arrays.append(part)
        meta = self._meta(layout)
        metadata = {b"sprig": orjson.dumps(meta)}
        if self.kind == "selection" and self.rows is not None:
            table = self.rows.replace_schema_metadata(metadata)
            batches = table.to_batches()
            if len(batches) != 1:  # none (no rows) or several: a stream writer's
                sink = pa.BufferOutputStream()
                with pa.ipc.new_stream(sink, table.schema) as writer:
                    writer.write_table(table)
                return sink.getvalue().to_pybytes()
            batch = batches[0]
        elif arrays:
            arrays = [a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a for a in arrays]
            batch = pa.RecordBatch.from_arrays(arrays, names=names, metadata=metadata)
        else:
            batch = pa.RecordBatch.from_arrays(
                [pa.array([], pa.int8())], names=["_"], metadata=metadata
            )
        # one batch: the same stream a writer makes, its messages serialized directly, at
        # half the cost for the small results of selective queries
        return b"".join((
            batch.schema.serialize().to_pybytes(), batch.serialize().to_pybytes(),
            _END_OF_STREAM,
        ))  # fmt: skip

    def _marked_keys(self) -> list[tuple[int, np.ndarray]]:
        """(position, NULL marks) of each key that has NULL groups."""
        return [(i, m) for i, m in enumerate(self.key_nulls or []) if m is not None]

    def _meta(self, layout: list[int]) -> dict:
        meta = {
            "kind": self.kind,
            "stats": self.stats,
            "numGroupsLimitReached": self.num_groups_limit_reached,
            "exceptions": self.exceptions,
            "numKeys": len(self.keys or []),
            "nullKeys": [i for i, _ in self._marked_keys()],
            "stateLayout": layout,
            "hasRows": self.rows is not None,
            "hasStates": self.states is not None or self.encoded_states is not None,
        }
        if self.trace is not None:
            meta["trace"] = self.trace
        return meta

    def _numeric_frame(self, plan) -> bytes | None:
        """The numeric frame of an aggregation or group-by result, or None when a key or a
        state is not a numeric array, or a function has its own state codec."""
        states = self.decoded_states(plan) or []
        arrays = list(self.keys or []) + [m for _, m in self._marked_keys()]
        layout = []
        for fn, state in zip(plan.aggregations, states, strict=True):
            if not fn.plain_state_codec():
                return None
            arrays.extend(state)
            layout.append(len(state))
        if not all(map(numeric_frame.is_numeric, arrays)):
            return None
        return numeric_frame.encode(self._meta(layout), arrays)

    @classmethod
    def from_bytes(cls, data: bytes) -> IntermediateResult:
        if data[: len(numeric_frame.MAGIC)] == numeric_frame.MAGIC:
            return cls._from_frame(data)
        return cls._from_stream(data)

    @classmethod
    def _from_frame(cls, data: bytes) -> IntermediateResult:
        try:
            meta, arrays = numeric_frame.decode(data)
            result = cls._with_meta(meta)
            num_keys, layout = meta["numKeys"], meta["stateLayout"]
            null_keys = meta.get("nullKeys", [])
        except (ValueError, KeyError, TypeError) as err:
            raise QueryExecutionError(f"Malformed intermediate result: {err}") from err
        width = num_keys + len(null_keys)
        if len(arrays) != width + sum(layout) or result.kind == "selection":
            raise QueryExecutionError(
                f"Malformed intermediate result: {len(arrays)} arrays for {num_keys} keys "
                f"and state arrays {layout} of a {result.kind} result"
            )
        if result.kind == "group_by":
            result.keys = arrays[:num_keys]
            result.key_nulls = _key_nulls(num_keys, null_keys, arrays[num_keys:width])
        if meta["hasStates"]:
            position = width
            result.states = []
            for width in layout:
                result.states.append(tuple(arrays[position : position + width]))
                position += width
        return result

    @classmethod
    def _with_meta(cls, meta: dict) -> IntermediateResult:
        """A result holding ``meta``'s kind, stats, flags, exceptions and trace."""
        return cls(
            kind=meta["kind"],
            stats={**empty_stats(), **meta["stats"]},
            num_groups_limit_reached=bool(meta["numGroupsLimitReached"]),
            exceptions=list(meta["exceptions"]),
            trace=meta.get("trace"),
        )

    @classmethod
    def _from_stream(cls, data: bytes) -> IntermediateResult:
        try:
            schema, batches = _read_stream(data)
            meta = orjson.loads(schema.metadata[b"sprig"])
            # OSError: Arrow's "expected to read N bytes" of a body cut short
            result = cls._with_meta(meta)
        except (pa.ArrowInvalid, OSError, KeyError, TypeError, orjson.JSONDecodeError) as err:
            raise QueryExecutionError(f"Malformed intermediate result: {err}") from err
        if meta["kind"] == "selection":
            if meta["hasRows"]:
                table = pa.Table.from_batches(batches, schema)
                result.rows = table.replace_schema_metadata(None)
            return result
        # the columns by position, in the order to_bytes writes them: the keys, then each
        # aggregation's state columns (looking each up by name cost more than reading them)
        if len(batches) == 1:
            columns = batches[0].columns
        else:
            columns = [c.combine_chunks() for c in pa.Table.from_batches(batches, schema).columns]
        num_keys, layout = meta["numKeys"], meta["stateLayout"]
        null_keys = meta.get("nullKeys", [])
        width = num_keys + len(null_keys)
        needed = width + (sum(layout) if meta["hasStates"] else 0)
        if (meta["hasStates"] or meta["kind"] == "group_by") and len(columns) < needed:
            raise QueryExecutionError(
                f"Malformed intermediate result: {len(columns)} columns for {num_keys} keys "
                f"and state columns {layout}"
            )
        if meta["kind"] == "group_by":
            numpy = [c.to_numpy(zero_copy_only=False) for c in columns[:width]]
            result.keys = numpy[:num_keys]
            result.key_nulls = _key_nulls(num_keys, null_keys, numpy[num_keys:])
        if meta["hasStates"]:
            position = width
            result.encoded_states = []
            for width in layout:
                result.encoded_states.append(columns[position : position + width])
                position += width
        return result
