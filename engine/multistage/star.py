"""Star joins without hash joins: a stage's chain of inner joins between one growing side
(the fact rows: a leaf, or a stage's input) and dimension sides every worker holds whole,
each on one integer key, is answered by looking the fact rows' keys up in each dimension's
keys (numpy positions, no hash table over the fact rows), then the stage's other operators
run over the joined rows (``$star``) as usual.

The pattern must match exactly, or the stage runs its joins as before: every join inner,
its condition one equality of two integer columns, one between the growing side (or a
dimension joined before) and the dimension. At run time a dimension whose non-NULL keys
repeat (no primary key holds) also falls back, since a key would then match several rows.
A NULL key matches nothing on either side, as in SQL; without null handling the leaf's
stored defaults are values and match as values, as they do in the hash join.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from engine.multistage.clauses import conjuncts
from engine.multistage.logical import Aggregate, Filter, Join, Node, walk
from engine.multistage.render import Input
from engine.multistage.scope import column_ids

DENSE_SLACK = 8  # a key range at most this many times the keys (+64K) is a position table


@dataclasses.dataclass
class StarDimension:
    sql: str  # the dimension side's rows, over the stage's inputs
    probe: str  # field id of the key on the growing side (the fact's, or an earlier dimension's)
    key: str  # field id of the key among the dimension's fields

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class StarJoin:
    fact_sql: str  # the growing side's rows
    fact_input: str | None  # the input table it is, when it only reads one whole
    dimensions: list[StarDimension]  # in join order, innermost first
    fields: list[str]  # the joins' output field ids, in order
    sql: str  # the stage's SQL with the joins read from ``$star``
    # dimension field id -> the stage output's column of it: a field only grouped on (the
    # stage is that GROUP BY) is gathered as its value's code and decoded after grouping
    codes: dict[str, int] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict:
        return {"factSql": self.fact_sql, "factInput": self.fact_input, "fields": self.fields,
                "dimensions": [d.to_json() for d in self.dimensions], "sql": self.sql,
                "codes": self.codes}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict | None) -> StarJoin | None:
        if d is None:
            return None
        dims = [StarDimension(x["sql"], x["probe"], x["key"]) for x in d["dimensions"]]
        return cls(d["factSql"], d["factInput"], dims, d["fields"], d["sql"], d.get("codes", {}))


def star_join(body: Node, whole: set[str], render, types: dict[str, pa.DataType]
              ) -> StarJoin | None:  # fmt: skip
    """The star join of a stage's operator tree ``body`` (its topmost chain of joins that
    matches), or None. ``whole``: input tables every worker holds complete; ``render(node)``:
    a node's SQL."""
    for node in walk(body):
        if not isinstance(node, Join):
            continue
        found = _chain(node, whole, types)
        if found is None:
            return None  # the topmost join: a chain below it would not remove its hash join
        fact, dims = found
        # the joined rows carry only the columns something above the joins reads
        read = _read_above(body, node)
        kept = [f for f in node.fields if f.id in read] or node.fields[:1]
        replaced = _replace(body, node, Input(kept, "$star"))
        fact_input = fact.table if isinstance(fact, Input) else None
        dimensions = [StarDimension(render(side), probe, key) for side, probe, key in dims]
        dim_ids = {f.id for side, _, _ in dims for f in side.fields} - \
            {i for _, probe, key in dims for i in (probe, key)}  # fmt: skip
        return StarJoin(render(fact), fact_input, dimensions, [f.id for f in kept],
                        render(replaced), _group_codes(body, node, dim_ids, types))  # fmt: skip
    return None


def _group_codes(body: Node, join: Node, dim_ids: set[str], types) -> dict[str, int]:
    """The dimension fields (not integers) that the stage only groups on, each -> its
    output column: the stage is a GROUP BY without grouping sets over the joins (or over
    filters of them that do not name the field) and the field is a key as a plain column
    and named nowhere else."""
    if not isinstance(body, Aggregate) or body.grouping_sets is not None:
        return {}
    between, node = [], body.input
    while node is not join:
        if not isinstance(node, Filter):
            return {}
        between.append(node.condition)
        node = node.input
    plain = [k.name if isinstance(k, exp.Column) else None for k in body.keys]
    elsewhere = _named([[k for k in body.keys if not isinstance(k, exp.Column)], body.aggs,
                        between])  # fmt: skip
    return {name: i for i, name in enumerate(plain)
            if name in dim_ids and name not in elsewhere and plain.count(name) == 1
            and not _integer(types.get(name))}  # fmt: skip


def _read_above(node: Node, target: Node) -> set[str]:
    """The field ids that the nodes outside ``target`` output or name in an expression (a
    superset of what they read: each node's fields and every expression it holds)."""
    if node is target:
        return set()
    ids = {f.id for f in node.fields} | _named(
        [getattr(node, f.name) for f in dataclasses.fields(node)]
    )
    for child in node.inputs:
        ids |= _read_above(child, target)
    return ids


def _named(value) -> set[str]:
    if isinstance(value, exp.Expression):
        return column_ids(value)
    if isinstance(value, Node | str):
        return set()  # a node has its own turn
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*(_named(v) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _named([getattr(value, f.name) for f in dataclasses.fields(value)])
    return set()


def _chain(join: Join, whole: set[str], types) -> tuple[Node, list] | None:
    """(the growing side, [(dimension side, probe id, key id)] innermost first), or None."""
    if join.kind != "inner" or join.match_condition is not None or join.null_aware:
        return None
    parts = conjuncts(join.condition) if join.condition is not None else []
    if len(parts) != 1 or not isinstance(parts[0], exp.EQ):
        return None
    a, b = parts[0].this, parts[0].expression
    if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
        return None
    left_whole, right_whole = _whole(join.left, whole), _whole(join.right, whole)
    if left_whole == right_whole:
        return None
    grow, dim = (join.right, join.left) if left_whole else (join.left, join.right)
    grow_ids, dim_ids = {f.id for f in grow.fields}, {f.id for f in dim.fields}
    probe, key = (a.name, b.name) if a.name in grow_ids else (b.name, a.name)
    if probe not in grow_ids or key not in dim_ids:
        return None
    if not all(_integer(types.get(i)) for i in (probe, key)):
        return None
    if isinstance(grow, Join):
        inner = _chain(grow, whole, types)
        if inner is None:
            return None
        return inner[0], [*inner[1], (dim, probe, key)]
    if any(isinstance(n, Join) for n in walk(grow)):
        return None
    return grow, [(dim, probe, key)]


def _integer(t: pa.DataType | None) -> bool:
    return t is not None and pa.types.is_integer(t)


def _whole(node: Node, whole: set[str]) -> bool:
    inputs = [n for n in walk(node) if isinstance(n, Input)]
    return bool(inputs) and all(n.table in whole for n in inputs)


def _replace(node: Node, target: Node, by: Node) -> Node:
    if node is target:
        return by
    inputs = [_replace(c, target, by) for c in node.inputs]
    return node.replace_inputs(inputs) if inputs else node


# --- run time ----------------------------------------------------------------------------------
def join_star(star: StarJoin, fact: pa.Table, dimensions: list[pa.Table],
              coded: dict[str, pa.DictionaryArray] | None = None) -> pa.Table | None:  # fmt: skip
    """The rows of the star's joins (columns ``star.fields``; a coded field's codes from
    ``coded``, see ``dictionaries``), or None when a dimension's keys repeat (the caller
    runs the hash joins)."""
    lookups = []
    for dim, table in zip(star.dimensions, dimensions, strict=True):
        lookup = KeyPositions.of(table.column(dim.key))
        if lookup is None:
            return None
        lookups.append(lookup)
    wanted = {*star.fields, *(d.probe for d in star.dimensions)}
    columns = {name: fact.column(name) for name in fact.column_names if name in wanted}
    for dim, table, lookup in zip(star.dimensions, dimensions, lookups, strict=True):
        positions = lookup.find(columns[dim.probe])
        matched = positions >= 0
        if not matched.all():
            rows = np.flatnonzero(matched)
            columns = {name: column.take(rows) for name, column in columns.items()}
            positions = positions[matched]
        for name in table.column_names:
            if coded and name in coded:
                codes = coded[name].indices.to_numpy(zero_copy_only=False)
                columns[name] = pa.array(codes[positions])
            elif name in wanted:
                columns[name] = table.column(name).take(positions)
    return pa.table({name: columns[name] for name in star.fields})


def dictionary(column: pa.ChunkedArray) -> pa.DictionaryArray:
    """A dimension column's distinct values and each row's code; NULL is a value of its
    own (a group apart from every other value)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return pc.dictionary_encode(array, null_encoding="encode")


def dictionaries(star: StarJoin, dimensions: list[pa.Table]) -> dict[str, pa.DictionaryArray]:
    """Each coded field's dictionary (``star.codes``), computed once per stage."""
    return {name: dictionary(side.column(name)) for side in dimensions
            for name in side.column_names if name in star.codes}  # fmt: skip


def decode(star: StarJoin, table: pa.Table, coded: dict[str, pa.DictionaryArray]) -> pa.Table:
    """The stage's output with each coded group key's codes replaced by its values."""
    for name, i in star.codes.items():
        values = coded[name].dictionary.take(table.column(i))
        table = table.set_column(i, table.field(i).name, values)
    return table


class KeyPositions:
    """Each distinct non-NULL key of a dimension -> its row, for integer keys: a table
    indexed by key when their range is compact, else a sorted search."""

    def __init__(self, keys: np.ndarray, rows: np.ndarray) -> None:
        self.dense: np.ndarray | None = None
        self.low = int(keys.min()) if len(keys) else 0
        self.high = int(keys.max()) if len(keys) else -1
        self.unique = True
        if self.high - self.low < DENSE_SLACK * len(keys) + (1 << 16):
            self.dense = np.full(self.high - self.low + 1, -1, dtype=np.int64)
            self.dense[keys - self.low] = rows
            # a repeated key wrote one slot twice (no sort needed to tell)
            self.unique = int(np.count_nonzero(self.dense >= 0)) == len(keys)
        else:
            order = np.argsort(keys, kind="stable")
            self.sorted, self.rows = keys[order], rows[order]
            self.unique = not (self.sorted[1:] == self.sorted[:-1]).any()

    @classmethod
    def of(cls, column: pa.ChunkedArray) -> KeyPositions | None:
        """None when a non-NULL key repeats."""
        keys, valid = _numbers(column)
        rows = np.arange(len(keys), dtype=np.int64)
        if valid is not None:
            keys, rows = keys[valid], rows[valid]
        found = cls(keys, rows)
        return found if found.unique else None

    def find(self, column: pa.ChunkedArray) -> np.ndarray:
        """The dimension row of each value of ``column``, -1 where none (or NULL)."""
        values, valid = _numbers(column)
        if self.dense is not None and len(values) and valid is None and \
                self.low <= values.min() and values.max() <= self.high:  # fmt: skip
            return np.take(self.dense, values - self.low)  # (every value in range: one gather)
        positions = np.full(len(values), -1, dtype=np.int64)
        inside = (values >= self.low) & (values <= self.high)
        if valid is not None:
            inside &= valid
        if self.dense is not None:
            positions[inside] = self.dense[values[inside] - self.low]
        elif len(self.sorted):
            probe = values[inside]
            at = np.minimum(np.searchsorted(self.sorted, probe), len(self.sorted) - 1)
            positions[inside] = np.where(self.sorted[at] == probe, self.rows[at], -1)
        return positions


def _numbers(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray | None]:
    """(int64 values, validity or None when there are no NULLs)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    valid = None
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)
        array = array.fill_null(0)
    return array.to_numpy(zero_copy_only=False).astype(np.int64, copy=False), valid
