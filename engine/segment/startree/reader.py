"""Reading a star-tree: nodes, records and the traversal a query engine needs."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from engine.common.errors import SegmentError
from engine.segment.files import BufferReader
from engine.segment.startree.functions import components_of

STAR = -1
NODE_DTYPE = np.dtype(
    [
        ("level", np.int32),
        ("value", np.int32),
        ("start", np.int64),
        ("end", np.int64),
        ("first_child", np.int64),
        ("num_children", np.int64),
        ("star_child", np.int64),
    ]
)


class StarTreeNode:
    """One node. ``level`` is its depth (the root is 0); its children split on dimension
    ``dimensions_split_order[level]`` (``dimension``). ``value`` is this node's own dict id
    for the parent's dimension (STAR for star nodes and the root). ``start_record`` /
    ``end_record`` are the half-open record range it covers."""

    def __init__(self, tree: StarTree, index: int):
        self._tree = tree
        self.index = index
        row = tree._nodes[index]
        self.level = int(row["level"])
        self.value = int(row["value"])
        self.start_record = int(row["start"])
        self.end_record = int(row["end"])
        self._first = int(row["first_child"])
        self._count = int(row["num_children"])
        self._star = int(row["star_child"])

    @property
    def dimension(self) -> str | None:
        order = self._tree.dimensions_split_order
        return order[self.level] if self.level < len(order) else None

    @property
    def is_leaf(self) -> bool:
        return self._count == 0 and self._star < 0

    @property
    def is_star(self) -> bool:
        return self.value == STAR and self.index != 0

    @property
    def children(self) -> list[StarTreeNode]:
        """Non-star children, by ascending dict id."""
        return [StarTreeNode(self._tree, i) for i in range(self._first, self._first + self._count)]

    @property
    def star_child(self) -> StarTreeNode | None:
        return StarTreeNode(self._tree, self._star) if self._star >= 0 else None

    def child(self, dict_id: int) -> StarTreeNode | None:
        """The child for ``dict_id``, or None (binary search over the sorted children)."""
        if self._count == 0:
            return None
        values = self._tree._nodes["value"][self._first : self._first + self._count]
        pos = int(np.searchsorted(values, dict_id))
        if pos < self._count and values[pos] == dict_id:
            return StarTreeNode(self._tree, self._first + pos)
        return None

    def __repr__(self) -> str:
        return f"StarTreeNode(level={self.level}, value={self.value}, records=[{self.start_record}, {self.end_record}))"


class StarTree:
    def __init__(self, segment, store: BufferReader, index: int, entry: dict):
        self.segment = segment
        self.index = index
        self.dimensions_split_order: list[str] = list(entry["dimensionsSplitOrder"])
        self.function_column_pairs: list[str] = list(entry["functionColumnPairs"])
        self.max_leaf_records: int = int(entry["maxLeafRecords"])
        self.skip_star_node_creation_for_dimensions: list[str] = list(
            entry.get("skipStarNodeCreationForDimensions", [])
        )
        self.num_records: int = int(entry["numRecords"])
        self._store = store
        self._prefix = entry["prefix"]
        self._state_keys = {
            key: f"{self._prefix}.state{k}" for k, key in enumerate(entry["states"])
        }
        self._nodes = store.array(f"{self._prefix}.nodes")

    @property
    def num_nodes(self) -> int:
        return len(self._nodes)

    @property
    def root(self) -> StarTreeNode:
        return StarTreeNode(self, 0)

    def dimension(self, name: str) -> np.ndarray:
        """Per-record dict ids of ``name`` (int32; STAR = -1)."""
        try:
            j = self.dimensions_split_order.index(name)
        except ValueError:
            raise SegmentError(f"{name!r} is not a dimension of this star-tree") from None
        return self._store.array(f"{self._prefix}.dim{j}")

    def components(self, pair: str) -> tuple[str, ...]:
        return components_of(pair)

    def metric(self, pair: str, component: str | None = None) -> np.ndarray:
        """Per-record aggregated state of ``pair`` (e.g. "SUM__m"); functions with two states
        (AVG, MINMAXRANGE) need ``component``."""
        pair = f"{pair.partition('__')[0].upper()}__{pair.partition('__')[2]}"
        if pair not in self.function_column_pairs:
            raise SegmentError(f"star-tree has no {pair!r}; it has {self.function_column_pairs}")
        comps = components_of(pair)
        if component is None:
            if len(comps) != 1:
                raise SegmentError(f"{pair} keeps {comps}; name the component")
            component = comps[0]
        key = self._state_keys.get(f"{pair}.{component}")
        if key is None:
            raise SegmentError(f"{pair} has no {component!r} state; it keeps {comps}")
        return self._store.array(key)

    def supports(
        self, predicate_dims: Iterable[str], group_by: Iterable[str], pairs: Iterable[str]
    ) -> bool:
        """True if a query filtering/grouping on these dims and aggregating these pairs can be
        answered from this tree."""
        dims = set(self.dimensions_split_order)
        return (
            set(predicate_dims) <= dims
            and set(group_by) <= dims
            and set(pairs) <= set(self.function_column_pairs)
        )

    def matching_records(
        self, predicates: dict[str, Iterable[int]], group_by: Iterable[str] = ()
    ) -> np.ndarray:
        """Record ids that together answer a query with ``predicates`` (dimension -> allowed
        dict ids, i.e. EQ/IN) grouped by ``group_by``. Aggregating the returned records'
        states per group-by key gives the exact result; dims in neither are aggregated away
        (their records may hold STAR or concrete values)."""
        allowed = {d: np.unique(np.asarray(list(v), dtype=np.int64)) for d, v in predicates.items()}
        group = set(group_by)
        unknown = (set(allowed) | group) - set(self.dimensions_split_order)
        if unknown:
            raise SegmentError(f"dimensions {sorted(unknown)} are not in the star-tree split order")
        ranges: list[tuple[int, int]] = []
        stack = [self.root]
        while stack:
            node = stack.pop()
            if node.is_leaf:
                ranges.append((node.start_record, node.end_record))
                continue
            dim = node.dimension
            if dim in allowed:
                stack.extend(c for c in (node.child(int(v)) for v in allowed[dim]) if c is not None)
            elif dim in group or node.star_child is None:
                stack.extend(node.children)
            else:
                stack.append(node.star_child)
        if not ranges:
            return np.zeros(0, dtype=np.int64)
        ids = np.concatenate([np.arange(s, e, dtype=np.int64) for s, e in ranges])
        for dim, values in allowed.items():
            ids = ids[np.isin(self.dimension(dim)[ids], values)]
        return np.sort(ids)

    def __repr__(self) -> str:
        return f"StarTree({self.dimensions_split_order}, {self.function_column_pairs}, records={self.num_records})"
