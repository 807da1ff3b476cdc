"""prepare_rows when a batch fails in a way nobody foresaw (a bug met on unusual input, not a
bad value the coercion reports): with continue_on_error the batch is shaped again row by row,
the rows that still fail are error rows naming the exception, and the others are kept, in
order; without it the failure propagates."""

import pyarrow as pa
import pytest

from engine.common.errors import IngestError
from engine.ingest import prepare_rows
from engine.ingest.transforms import RecordTransformer
from tests.engine.conftest import make_schema

SCHEMA = make_schema(dimensions=[{"name": "s", "dataType": "STRING"}],
                     metrics=[{"name": "m", "dataType": "LONG"}])  # fmt: skip


class Fragile(RecordTransformer):
    """Trips over the value "boom", as a bug in a transform would."""

    def transform(self, batch):
        if "boom" in batch.column("s").to_pylist():
            raise ZeroDivisionError("division by zero")
        return super().transform(batch)


def test_rows_that_throw_are_skipped_and_the_rest_kept():
    data = pa.table({"s": ["a", "boom", "b", "boom", "c"], "m": ["1", "2", "3", "x", "5"]})
    prepared = prepare_rows(data, SCHEMA, None, continue_on_error=True,
                            transformer=Fragile(SCHEMA, None))  # fmt: skip
    assert prepared.table.column("s").to_pylist() == ["a", "b", "c"]
    assert prepared.table.column("m").to_pylist() == [1, 3, 5]
    assert list(prepared.positions) == [0, 2, 4]
    assert [(e.row, e.message) for e in prepared.errors] == [
        (1, "cannot be ingested: ZeroDivisionError: division by zero"),
        (3, "cannot be ingested: ZeroDivisionError: division by zero"),
    ]


def test_without_continue_on_error_the_failure_propagates():
    data = pa.table({"s": ["a", "boom"], "m": [1, 2]})
    with pytest.raises(ZeroDivisionError):
        prepare_rows(data, SCHEMA, None, transformer=Fragile(SCHEMA, None))
    with pytest.raises(IngestError, match="row 1"):  # a bad value still names its row
        prepare_rows(pa.table({"s": ["a", "b"], "m": ["1", "x"]}), SCHEMA, None)
