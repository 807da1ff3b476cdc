"""Reading a segment back into Arrow rows, for jobs that rewrite segments (merge/rollup,
realtime-to-offline, purge). The table feeds straight back into ``build_segment``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.segment.column_reader import ColumnReader


def column_to_arrow(column: ColumnReader) -> pa.Array:
    """One column in stored Arrow types (list arrays for multi-value). Docs in the column's
    null vector come back as nulls, so a rebuild keeps them null."""
    meta = column.metadata
    arrow_type = meta.data_type.arrow_type
    if column.dictionary is not None:
        ids = column.dict_ids() if meta.single_value else column.mv_dict_ids()
        values = column.dictionary.values
        if isinstance(values, np.ndarray):
            flat = pa.array(np.asarray(values)[ids], arrow_type)
        else:
            flat = values.take(pa.array(np.asarray(ids, dtype=np.int64)))
    else:
        flat = column.raw_values().cast(arrow_type)
    if meta.single_value:
        out = flat
    else:
        offsets = np.asarray(column.mv_offsets(), dtype=np.int64)
        out = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), flat)
    nulls = column.null_bitmap
    if nulls:
        mask = np.zeros(len(out), dtype=bool)
        mask[np.fromiter(nulls, dtype=np.int64, count=len(nulls))] = True
        out = pc.if_else(pa.array(mask), pa.scalar(None, out.type), out)
    return out


def segment_to_table(segment, columns: list[str] | None = None) -> pa.Table:
    """The segment's rows (all columns, or ``columns``) as an Arrow table, in doc order."""
    names = columns if columns is not None else segment.column_names
    return pa.table({name: column_to_arrow(segment.column(name)) for name in names})
