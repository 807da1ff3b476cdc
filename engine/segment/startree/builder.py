"""Builds star-trees from a segment's encoded columns (vectorised per node with numpy)."""

from __future__ import annotations

import itertools
from collections import deque

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.common.errors import ConfigError
from engine.common.types import DataType, FieldType
from engine.segment.column_writer import EncodedColumn
from engine.segment.files import BufferWriter
from engine.segment.startree.functions import COMBINE, DTYPES, components_of
from engine.segment.startree.reader import NODE_DTYPE, STAR
from engine.spi.schema import Schema
from engine.spi.table_config import StarTreeIndexConfig, TableConfig

DEFAULT_MAX_CARDINALITY = 10_000


def default_star_tree_config(columns: dict[str, EncodedColumn]) -> StarTreeIndexConfig | None:
    """Pinot's default star-tree: dictionary-encoded single-value dimensions with cardinality
    <= 10000 by descending cardinality, then such time columns; COUNT(*) and SUM of every
    numeric single-value metric."""

    def eligible(c: EncodedColumn, types) -> bool:
        m = c.metadata
        return (
            m.field_type in types
            and m.single_value
            and m.has_dictionary
            and m.cardinality <= DEFAULT_MAX_CARDINALITY
        )

    def by_card(cols) -> list[str]:
        return [c.metadata.name for c in sorted(cols, key=lambda c: -c.metadata.cardinality)]

    dims = by_card([c for c in columns.values() if eligible(c, {FieldType.DIMENSION})])
    dims += by_card(
        [c for c in columns.values() if eligible(c, {FieldType.DATE_TIME, FieldType.TIME})]
    )
    if not dims:
        return None
    pairs = ["COUNT__*"] + [
        f"SUM__{c.metadata.name}"
        for c in columns.values()
        if c.metadata.field_type is FieldType.METRIC
        and c.metadata.single_value
        and c.metadata.data_type.is_numeric
    ]
    return StarTreeIndexConfig(dims, pairs, [], DEFAULT_MAX_CARDINALITY)


def _numeric_values(column: EncodedColumn) -> np.ndarray:
    """Flat values of a column as float64 (per entry for MV)."""
    if column.dictionary is not None:
        dictionary = column.dictionary
        if column.metadata.data_type is DataType.BIG_DECIMAL:
            dictionary = pc.cast(dictionary, pa.float64())
        values = dictionary.to_numpy(zero_copy_only=False).astype(np.float64)
        return values[column.dict_ids]
    raw = column.raw
    if column.metadata.data_type is DataType.BIG_DECIMAL:
        raw = pc.cast(raw, pa.float64())
    return raw.to_numpy(zero_copy_only=False).astype(np.float64)


def _per_doc_states(
    pair: str, columns: dict[str, EncodedColumn], num_docs: int
) -> dict[str, np.ndarray]:
    function, _, col = pair.partition("__")
    if function == "COUNT":
        return {"count": np.ones(num_docs, dtype=np.int64)}
    column = columns[col]
    values = _numeric_values(column)
    if function.endswith("MV"):
        offsets = column.mv_offsets.astype(np.int64)
        counts = np.diff(offsets)
        starts = offsets[:-1]
        nonempty = counts > 0
        states = {}
        for comp in components_of(pair):
            if comp == "count":
                states[comp] = counts.astype(np.int64)
                continue
            ufunc = COMBINE[comp]
            out = np.zeros(num_docs, dtype=np.float64)
            if len(values):
                out[nonempty] = ufunc.reduceat(values, starts[nonempty])
            states[comp] = out
        return states
    return {
        comp: (np.ones(num_docs, np.int64) if comp == "count" else values)
        for comp in components_of(pair)
    }


def _sort_keys(keys: np.ndarray) -> np.ndarray:
    """Stable lexicographic order of the rows of ``keys`` (int32 dict ids, STAR = -1)."""
    if keys.shape[1] == 0:
        return np.arange(len(keys))
    # Pack the row into one int64 (mixed radix) when it fits: one argsort instead of lexsort.
    spans = keys.max(axis=0).astype(np.int64) + 2  # +1 for STAR, +1 for the max itself
    if np.sum(np.log2(spans)) < 62:
        packed = np.zeros(len(keys), dtype=np.int64)
        for j in range(keys.shape[1]):
            packed = packed * spans[j] + (keys[:, j].astype(np.int64) + 1)
        return np.argsort(packed, kind="stable")
    return np.lexsort(keys.T[::-1])


def _group(dims: np.ndarray, states: dict, from_level: int):
    """Sort records by dims[from_level:] and merge equal rows. Returns (dims, states)."""
    n = len(dims)
    if n == 0:
        return dims, states
    order = _sort_keys(dims[:, from_level:])
    dims = dims[order]
    keys = dims[:, from_level:]
    if keys.shape[1]:
        change = np.any(keys[1:] != keys[:-1], axis=1)
        starts = np.concatenate([[0], np.flatnonzero(change) + 1])
    else:
        starts = np.zeros(1, dtype=np.int64)
    merged = {}
    for key, arr in states.items():
        comp = key.rpartition(".")[2]
        merged[key] = COMBINE[comp].reduceat(arr[order], starts)
    return dims[starts], merged


class _Records:
    """Growing store of star-tree records, kept as chunks; every node's range lies in one."""

    def __init__(self, dims: np.ndarray, states: dict):
        self.chunks = [(dims, states)]
        self.bases = [0]
        self.total = len(dims)

    def append(self, dims: np.ndarray, states: dict) -> int:
        self.chunks.append((dims, states))
        self.bases.append(self.total)
        self.total += len(dims)
        return len(self.chunks) - 1


def _build_tree(config: StarTreeIndexConfig, dims: np.ndarray, states: dict):
    records = _Records(*_group(dims, states, 0))
    num_dims = dims.shape[1]
    skip = {
        config.dimensions_split_order.index(d)
        for d in config.skip_star_node_creation_for_dimensions
    }
    nodes: list[tuple] = [
        (0, STAR, 0, records.total, -1, 0, -1)
    ]  # level, value, start, end, first, n, star
    queue = deque([(0, 0, 0, records.total)])  # node index, chunk, local start, local end
    while queue:
        index, chunk, start, end = queue.popleft()
        level = nodes[index][0]
        if end - start <= config.max_leaf_records or level >= num_dims:
            continue
        cdims, cstates = records.chunks[chunk]
        base = records.bases[chunk]
        values = cdims[start:end, level]
        cuts = (
            np.concatenate([[0], np.flatnonzero(values[1:] != values[:-1]) + 1, [end - start]])
            + start
        )
        first = len(nodes)
        for lo, hi in itertools.pairwise(cuts):
            nodes.append((level + 1, int(cdims[lo, level]), base + lo, base + hi, -1, 0, -1))
            queue.append((len(nodes) - 1, chunk, lo, hi))
        star = -1
        if len(cuts) > 2 and level not in skip:
            sdims = cdims[start:end].copy()
            sdims[:, level] = STAR
            sstates = {k: v[start:end] for k, v in cstates.items()}
            sdims, sstates = _group(sdims, sstates, level + 1)
            new_chunk = records.append(sdims, sstates)
            star = len(nodes)
            nodes.append(
                (
                    level + 1,
                    STAR,
                    records.bases[new_chunk],
                    records.bases[new_chunk] + len(sdims),
                    -1,
                    0,
                    -1,
                )
            )
            queue.append((star, new_chunk, 0, len(sdims)))
        lvl, val, s, e, _, _, _ = nodes[index]
        nodes[index] = (lvl, val, s, e, first, len(cuts) - 1, star)
    all_dims = np.concatenate([c[0] for c in records.chunks])
    all_states = {
        k: np.concatenate([c[1][k] for c in records.chunks]) for k in records.chunks[0][1]
    }
    return np.array(nodes, dtype=NODE_DTYPE), all_dims, all_states


def build_star_trees(
    columns: dict[str, EncodedColumn],
    schema: Schema,
    table_config: TableConfig,
    writer: BufferWriter,
    num_docs: int,
) -> list[dict]:
    """Build the table's star-trees (and the default one if enabled); returns metadata entries."""
    configs = list(table_config.index_config.star_tree_configs)
    if table_config.index_config.enable_default_star_tree:
        default = default_star_tree_config(columns)
        if default is not None:
            configs.append(default)
    entries = []
    for t, config in enumerate(configs):
        path = f"tableIndexConfig.starTreeIndexConfigs[{t}]"
        for i, dim in enumerate(config.dimensions_split_order):
            column = columns.get(dim)
            if column is None or column.dict_ids is None or not column.metadata.single_value:
                raise ConfigError(
                    f"{path}.dimensionsSplitOrder[{i}]",
                    f"{dim!r} is not a dictionary-encoded single-value column",
                )
        for i, pair in enumerate(config.function_column_pairs):
            col = pair.partition("__")[2]
            if col != "*" and col not in columns:
                raise ConfigError(
                    f"{path}.functionColumnPairs[{i}]", f"column {col!r} is not in the schema"
                )
        dims = (
            np.stack(
                [columns[d].dict_ids.astype(np.int32) for d in config.dimensions_split_order],
                axis=1,
            )
            if num_docs
            else np.zeros((0, len(config.dimensions_split_order)), np.int32)
        )
        states = {}
        for pair in config.function_column_pairs:
            for comp, arr in _per_doc_states(pair, columns, num_docs).items():
                states[f"{pair}.{comp}"] = arr.astype(DTYPES[comp])
        nodes, rdims, rstates = _build_tree(config, dims, states)
        prefix = f"startree{t}"
        writer.put_array(f"{prefix}.nodes", nodes)
        for j in range(rdims.shape[1]):
            writer.put_array(f"{prefix}.dim{j}", np.ascontiguousarray(rdims[:, j]))
        keys = list(rstates)
        for k, key in enumerate(keys):
            writer.put_array(f"{prefix}.state{k}", rstates[key])
        entries.append(
            {
                **config.to_json(),
                "prefix": prefix,
                "numRecords": len(rdims),
                "numNodes": len(nodes),
                "states": keys,
            }
        )
    return entries
