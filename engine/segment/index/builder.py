"""Builds the configured per-column indexes of a segment from its encoded columns."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from engine.segment.column_writer import EncodedColumn
from engine.segment.files import BufferWriter
from engine.segment.index.bloom import DEFAULT_FPP, write_bloom_filter
from engine.segment.index.inverted import docs_grouped_by_id, write_inverted_index
from engine.segment.index.partition import record_partitions
from engine.segment.index.range_index import write_range_index
from engine.spi.table_config import TableConfig


def _distinct(column: EncodedColumn) -> list:
    values = column.dictionary if column.dictionary is not None else pc.unique(column.raw)
    return values.to_pylist()


def build_indexes(
    columns: dict[str, EncodedColumn],
    table_config: TableConfig,
    writer: BufferWriter,
    num_docs: int,
) -> None:
    """Write inverted, range and bloom indexes and partition metadata for ``columns``, and
    record what was built in each column's metadata."""
    inverted = set(table_config.inverted_index_columns)
    ranged = set(table_config.range_index_columns)
    bloom = set(table_config.bloom_filter_columns)
    bloom_configs = table_config.index_config.bloom_filter_configs
    partitioning = table_config.index_config.segment_partition_config
    for name, column in columns.items():
        meta = column.metadata
        prefix = meta.file_prefix
        sorted_sv = meta.single_value and meta.is_sorted and meta.has_dictionary
        if name in inverted and meta.has_dictionary and not sorted_sv:
            grouped = docs_grouped_by_id(column.dict_ids, meta.cardinality, column.mv_offsets)
            write_inverted_index(writer, prefix, *grouped)
            del grouped
            meta.indexes.append("inverted")
        if name in ranged:
            if sorted_sv:
                meta.indexes.append("range")  # the sorted index maps ranges to doc ranges
            elif meta.has_dictionary:
                write_range_index(writer, prefix, column.dict_ids, column.mv_offsets, None)
                meta.indexes.append("range")
            elif meta.data_type.is_fixed_width:
                raw = column.raw.to_numpy(zero_copy_only=False)
                distinct, ranks = np.unique(raw, return_inverse=True)
                write_range_index(writer, prefix, ranks, column.mv_offsets, distinct)
                meta.indexes.append("range")
        if name in bloom:
            conf = bloom_configs.get(name) or {}
            write_bloom_filter(
                writer,
                prefix,
                meta.data_type,
                _distinct(column),
                fpp=float(conf.get("fpp", DEFAULT_FPP)),
                max_size_bytes=conf.get("maxSizeInBytes"),
            )
            meta.indexes.append("bloom")
        if name in partitioning:
            record_partitions(meta, partitioning[name], _distinct(column))
