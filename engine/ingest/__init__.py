"""Reading input records and shaping them to a schema.

Public API::

    from engine.ingest import read_records, prepare_rows, RecordTransformer, coerce_table

    read_records(path, data_format=None, *, options=None, schema=None) -> Iterator[pa.RecordBatch]
        # csv | json (lines or one array) | avro | parquet; format from the extension if None.
        # options: delimiter, header, multiValueDelimiter, batchSize. IngestError(.row, .source)
        # for a missing or malformed file.
    records_to_batch(records, columns=None) -> pa.RecordBatch
        # dict records (decoded JSON/Avro messages) to Arrow; mixed-type keys become JSON text
    prepare_rows(data, schema, table_config, *, continue_on_error=False, source="input")
        -> PreparedRows(table, errors, num_read, num_filtered)
        # transforms -> filter -> coercion, as Pinot's record transformer chain; the coerced
        # table has the schema's stored Arrow types and no nulls. Used by build_segment.
    RecordTransformer(schema, table_config).transform(batch) -> (table, keep_mask | None)
    coerce_table(data, schema, *, nullable=frozenset()) -> CoercionResult(table, bad_rows)

Transform functions (``ingestionConfig.transformConfigs``, schema ``transformFunction``) are
Pinot's built-ins: fromEpochDays/Hours/Minutes/Seconds(+Bucket), toEpochDays/...(+Rounded,
+Bucket), fromDateTime, toDateTime, round, now, jsonFormat, jsonPathString/Long/Double/Array,
upper, lower, trim, length, reverse, concat, substr, replace, strcmp, arithmetic, comparisons,
and/or/not, IN, BETWEEN, IS NULL, CAST. Groovy is rejected (disabled by default in Pinot).
"""

from engine.ingest.coercion import CoercionResult, coerce_table
from engine.ingest.pipeline import PreparedRows, prepare_rows
from engine.ingest.readers import read_records, records_to_batch
from engine.ingest.transforms import RecordTransformer

__all__ = [
    "CoercionResult",
    "PreparedRows",
    "RecordTransformer",
    "coerce_table",
    "prepare_rows",
    "read_records",
    "records_to_batch",
]
