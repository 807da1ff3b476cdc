"""The immutable segment format: build, load, pack and unpack.

Public API::

    from engine.segment import build_segment, load_segment, pack_segment, unpack_segment

    result = build_segment(data, schema, table_config, out_dir, *, segment_name=None,
                           sequence_id=0, continue_on_error=False, source="input",
                           custom_metadata=None)
        # data: pa.Table or an iterable of pa.RecordBatch (raw input; transforms, filter and
        # coercion are applied here). -> SegmentBuildResult(path, name, metadata, num_rows,
        # num_rows_skipped, errors [IngestError(.row, .source)], num_rows_filtered)
        # Name: <table>_<minTime>_<maxTime>_<seq> unless segment_name is given. Built in a temp
        # dir and renamed, so a failed build leaves nothing. Raises IngestError (bad row and
        # not continue_on_error), SegmentError, ConfigError. Rows are sorted by the table's
        # sortedColumn; custom_metadata (e.g. input file, stream offsets) is kept in metadata.

    seg = load_segment(seg_dir)        # ImmutableSegment, memory-mapped, O(1) in data size
    seg.name / .table_name (with type) / .total_docs / .column_names / .metadata
    seg.metadata.to_pinot_properties() # {"segment.name": ..., "column.<c>.cardinality": ...}
    seg.metadata.to_json()             # segmentName, tableName, totalDocs, crc, creationTime,
                                       # startTime, endTime (inclusive, in timeUnit),
                                       # startTimeMs, endTimeMs (epoch ms), timeColumn,
                                       # timeUnit, columns{col: {dataType, cardinality, minValue,
                                       # maxValue, isSorted, hasDictionary, partitions, ...}}
    col = seg.column("name")           # ColumnReader
    col.metadata                       # ColumnMetadata(data_type, single_value, cardinality,
                                       #   min_value, max_value, is_sorted, has_dictionary,
                                       #   partition_function, num_partitions, partitions,
                                       #   max_num_multi_values, total_number_of_entries)
    col.dictionary                     # Dictionary or None (raw column):
                                       #   .values (sorted; numpy, or Arrow for var-width types)
                                       #   .index_of(v) -> id or -1; .get(id); .take(ids)
                                       #   .id_range(lo, hi, lo_inclusive, hi_inclusive)
                                       #     -> (start, end) half-open; None bound = unbounded
    col.dict_ids()                     # SV ids, smallest unsigned dtype (memory-mapped, or
                                       #   decompressed per call when stored zstd-compressed)
    col.dict_ids_range(start, end)     # SV ids of docs [start, end), only the chunks needed
    col.mv_offsets(), col.mv_dict_ids()  # MV: doc d is flat[offsets[d]:offsets[d+1]]
    col.values()                       # SV decoded numpy; MV (offsets, flat values)
    col.raw_values() / col.raw_chunks()  # raw columns: Arrow array / zstd chunk reader
    col.sorted_doc_range(dict_id)      # sorted columns: (start, end) half-open doc range
    col.inverted_index                 # .bitmap(dict_id) -> pyroaring.BitMap, or None
    col.range_index                    # .doc_ids(lo, hi, lo_inclusive, hi_inclusive) -> BitMap
    col.bloom_filter                   # .might_contain(value) -> bool
    col.null_bitmap                    # docs whose input was null (nullHandlingEnabled) or None
    All index accessors return None when the index was not built.
    seg.star_trees                     # [StarTree] (see engine.segment.startree)
    seg.size_bytes() / seg.close()     # bytes on disk / drop the mapping before deleting it
    seg.to_arrow(columns=None)         # rows as a pa.Table (stored types, MV as lists, nulls
                                       #   from the null vector) -- feeds back into build_segment

    pack_segment(seg_dir, tar_gz_path)       # -> tar_gz_path
    unpack_segment(tar_gz_path, dest_dir, verify_crc=True)  # -> segment dir; SegmentError if
                                             # corrupt, truncated or its CRC does not match

On disk a segment directory holds ``metadata.json``, ``metadata.properties`` (the same in
Pinot's key names), ``creation.meta`` (crc, creationTime),
``columns.psf`` (every buffer of every column, index and star-tree) and ``index_map.json``
(where each buffer is in ``columns.psf``).

Values are in stored form: BOOLEAN as INT 0/1, TIMESTAMP as LONG epoch ms, BIG_DECIMAL as
Decimal (Arrow decimal128(38, 18)), JSON as text, BYTES as bytes.
"""

from engine.segment.creator import SegmentBuildResult, build_segment, segment_crc
from engine.segment.loader import ImmutableSegment, load_segment, read_metadata
from engine.segment.metadata import ColumnMetadata, SegmentMetadata
from engine.segment.tarball import pack_segment, unpack_segment

__all__ = [
    "ColumnMetadata",
    "ImmutableSegment",
    "SegmentBuildResult",
    "SegmentMetadata",
    "build_segment",
    "load_segment",
    "pack_segment",
    "read_metadata",
    "segment_crc",
    "unpack_segment",
]
