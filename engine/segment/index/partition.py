"""Records in a column's metadata which partitions its values fall in, for the table's
``segmentPartitionConfig``. The partition functions themselves live in ``engine.spi.partition``,
which the pruners use too."""

from __future__ import annotations

from collections.abc import Iterable

from engine.common.errors import SegmentError
from engine.segment.metadata import ColumnMetadata
from engine.spi.partition import partition_function
from engine.spi.table_config_model import ColumnPartitionConfig


def record_partitions(
    meta: ColumnMetadata, config: ColumnPartitionConfig, distinct_values: Iterable
) -> None:
    """Set the function, its config and the sorted distinct partitions of ``distinct_values``
    (every value of the column, multi-value entries flattened) on ``meta``. Raises
    SegmentError naming the column when a value cannot be partitioned (Modulo of a
    non-integer), as Pinot fails the segment."""
    function = partition_function(
        config.function_name,
        config.num_partitions,
        config.function_config,
        path=f"tableIndexConfig.segmentPartitionConfig.columnPartitionMap.{meta.name}.",
    )
    try:
        partitions = function.partitions_of_values(distinct_values, meta.data_type)
    except ValueError as exc:
        raise SegmentError(f"column {meta.name!r}: {exc}") from exc
    meta.partition_function = function.name
    meta.num_partitions = function.num_partitions
    meta.partition_function_config = dict(function.function_config)
    meta.partitions = partitions
