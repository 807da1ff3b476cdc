import decimal
import math

import pytest

from engine.common.errors import ConfigError, IngestError
from engine.common.types import DataType, FieldType


@pytest.mark.parametrize(
    ("data_type", "dimension", "metric"),
    [
        (DataType.INT, -(2**31), 0),
        (DataType.LONG, -(2**63), 0),
        (DataType.FLOAT, -math.inf, 0.0),
        (DataType.DOUBLE, -math.inf, 0.0),
        (DataType.STRING, "null", "null"),
        (DataType.JSON, "null", "null"),
        (DataType.BOOLEAN, 0, 0),
        (DataType.TIMESTAMP, 0, 0),
        (DataType.BYTES, b"", b""),
        (DataType.BIG_DECIMAL, decimal.Decimal(0), decimal.Decimal(0)),
    ],
)
def test_pinot_default_null_values(data_type, dimension, metric):
    assert data_type.default_null_value(FieldType.DIMENSION) == dimension
    assert data_type.default_null_value(FieldType.DATE_TIME) == dimension
    assert data_type.default_null_value(FieldType.METRIC) == metric


def test_to_stored_conversions():
    assert DataType.INT.to_stored("12") == 12
    assert DataType.BOOLEAN.to_stored("true") == 1
    assert DataType.BOOLEAN.to_stored(False) == 0
    assert DataType.BYTES.to_stored("0aff") == b"\x0a\xff"
    assert DataType.TIMESTAMP.to_stored("2021-07-21 06:00:00") == 1626847200000
    with pytest.raises(ValueError):
        DataType.INT.to_stored(2**40)
    with pytest.raises(ValueError):
        DataType.BOOLEAN.to_stored("maybe")


def test_error_messages_name_where():
    err = ConfigError("tableIndexConfig.invertedIndexColumns[0]", "column 'x' is not in schema")
    assert err.field == "tableIndexConfig.invertedIndexColumns[0]"
    assert str(err).startswith("tableIndexConfig.invertedIndexColumns[0]: ")
    ingest = IngestError("bad value", row=7, source="a.csv")
    assert (ingest.row, ingest.source) == (7, "a.csv")
    assert str(ingest) == "a.csv, row 7: bad value"
