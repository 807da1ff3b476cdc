import pyarrow as pa
import pytest

from engine.common.errors import ConfigError
from engine.spi import DateTimeFormat


@pytest.mark.parametrize(
    ("text", "kind", "unit", "size", "pattern"),
    [
        ("1:MILLISECONDS:EPOCH", "EPOCH", "MILLISECONDS", 1, None),
        ("5:MINUTES:EPOCH", "EPOCH", "MINUTES", 5, None),
        ("1:DAYS:EPOCH", "EPOCH", "DAYS", 1, None),
        ("1:MILLISECONDS:TIMESTAMP", "TIMESTAMP", "MILLISECONDS", 1, None),
        (
            "1:SECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd'T'HH:mm:ssZ",
            "SIMPLE_DATE_FORMAT",
            "MILLISECONDS",
            1,
            "yyyy-MM-dd'T'HH:mm:ssZ",
        ),
        ("EPOCH|SECONDS|10", "EPOCH", "SECONDS", 10, None),
        ("SIMPLE_DATE_FORMAT|yyyyMMdd", "SIMPLE_DATE_FORMAT", "MILLISECONDS", 1, "yyyyMMdd"),
        ("TIMESTAMP", "TIMESTAMP", "MILLISECONDS", 1, None),
    ],
)
def test_parse(text, kind, unit, size, pattern):
    fmt = DateTimeFormat.parse(text)
    assert (fmt.kind, fmt.unit, fmt.size, fmt.pattern) == (kind, unit, size, pattern)


@pytest.mark.parametrize(
    "text", ["", "1:WEEKS:EPOCH", "x:DAYS:EPOCH", "1:DAYS:JULIAN", "1:DAYS:SIMPLE_DATE_FORMAT"]
)
def test_invalid_formats_name_the_field(text):
    with pytest.raises(ConfigError) as info:
        DateTimeFormat.parse(text, "dateTimeFieldSpecs[0].format")
    assert info.value.field == "dateTimeFieldSpecs[0].format"


def test_conversions_to_and_from_millis():
    days = DateTimeFormat.parse("1:DAYS:EPOCH")
    assert days.to_millis(pa.array([16071, None])).to_pylist() == [1388534400000, None]
    assert days.from_millis(pa.array([1388534400000 + 5, -1])).to_pylist() == [16071, -1]  # floor
    five_min = DateTimeFormat.parse("5:MINUTES:EPOCH")
    assert five_min.to_millis(pa.array([2])).to_pylist() == [600_000]
    sdf = DateTimeFormat.parse("1:DAYS:SIMPLE_DATE_FORMAT:yyyyMMdd")
    assert sdf.to_millis(pa.array(["20140101"])).to_pylist() == [1388534400000]
    assert sdf.from_millis(pa.array([1388534400000])).to_pylist() == ["20140101"]
    iso = DateTimeFormat.parse("1:SECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd'T'HH:mm:ssZ")
    assert (
        iso.to_millis(pa.array(["2021-07-21T06:00:00Z", "2021-07-21T08:00:00+0200"])).to_pylist()
        == [1626847200000] * 2
    )
    millis = DateTimeFormat.parse("1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS")
    assert millis.to_millis(pa.array(["2021-07-21 06:00:00.250"])).to_pylist() == [1626847200250]


def test_formatting_with_and_without_fractions():
    seconds = DateTimeFormat.parse("1:SECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss")
    assert seconds.from_millis(pa.array([1626847200250])).to_pylist() == ["2021-07-21 06:00:00"]
    millis = DateTimeFormat.parse("1:MILLISECONDS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH:mm:ss.SSS")
    assert millis.from_millis(pa.array([1626847200250])).to_pylist() == ["2021-07-21 06:00:00.250"]
