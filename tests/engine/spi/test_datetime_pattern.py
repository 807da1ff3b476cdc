"""Java date-time patterns: Joda's letters, quoting, fractions and errors."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from engine.common.errors import ConfigError
from engine.spi import DateTimeFormat, datetime_pattern
from engine.spi.datetime_pattern import (
    DateTimeParseError,
    InvalidPatternError,
    compile_pattern,
    format_java_datetime,
    parse_java_datetime,
)

T = 1394891130250  # 2014-03-15T13:45:30.250Z, a Saturday


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyy-MM-dd HH:mm:ss.SSS", "2014-03-15 13:45:30.250"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2014-03-15T13:45:30.250+0000"),
        ("yyyy-MM-dd'T'HH:mm:ssZZ", "2014-03-15T13:45:30+00:00"),
        ("yyyyMMdd", "20140315"),
        ("d/M/yy h:mm a", "15/3/14 1:45 PM"),
        ("EEE, dd MMM yyyy", "Sat, 15 Mar 2014"),
        ("EEEE MMMM d", "Saturday March 15"),
        ("yyyy.D", "2014.74"),
        ("HH:mm:ss.S|SS|SSSS", "13:45:30.2|25|2500"),
        ("kk KK", "13 01"),
        ("'at' HH 'o''clock'", "at 13 o'clock"),
        ("yyyy-MM-dd'T'HH:mm:ss'Z'", "2014-03-15T13:45:30Z"),
    ],
)
def test_format(pattern, text):
    assert format_java_datetime(pa.array([T]), pattern).to_pylist() == [text]


@pytest.mark.parametrize(
    ("pattern", "text", "millis"),
    [
        ("yyyy-MM-dd HH:mm:ss.SSS", "2014-03-15 13:45:30.250", T),
        ("yyyy-MM-dd HH:mm:ss.SSS", "2014-03-15 13:45:30.25", T),  # a fraction, not a count
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2014-03-15T15:45:30.250+0200", T),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZZ", "2014-03-15T13:45:30.250Z", T),
        ("yyyy-M-d H:m:s.SSS", "2014-3-15 13:45:30.250", T),
        ("dd MMM yyyy hh:mm:ss.SSS a", "15 MAR 2014 01:45:30.250 pm", T),
        ("EEE, d MMMM yyyy HH:mm:ss.SSS", "Sat, 15 March 2014 13:45:30.250", T),
        ("yyyyDDD", "2014074", T - T % 86_400_000),
        ("yyyy-MM-dd'T'HH:mm:ss'Z'", "1969-12-31T23:59:59Z", -1000),
    ],
)
def test_parse(pattern, text, millis):
    assert parse_java_datetime(pa.array([text, None]), pattern).to_pylist() == [millis, None]


def test_the_fixed_width_reader_and_the_general_reader_agree(monkeypatch):
    millis = np.random.default_rng(7).integers(-(10**12), 4 * 10**12, 2000)
    patterns = ["yyyy-MM-dd HH:mm:ss.SSS", "yyyyMMddHHmmss", "yyyy-MM-dd", "yyyy-MM-dd'T'HH:mmZ"]
    for pattern in [*patterns, "yyyy-MM-dd'T'HH:mm:ss.SSSZZ", "yyyy-MM-dd'T'HH:mmX"]:
        text = format_java_datetime(millis, pattern)
        fixed = parse_java_datetime(text, pattern).to_numpy()
        with monkeypatch.context() as patch:  # what the regular expression reads
            patch.setattr(datetime_pattern.parsing, "_fixed_width_fields", lambda *_: None)
            general = parse_java_datetime(text, pattern).to_numpy()
        assert np.array_equal(fixed, general), pattern
        assert format_java_datetime(fixed, pattern).to_pylist() == text.to_pylist()


@pytest.mark.parametrize("offset", ["Z", "+00", "+0000", "+00:00", "-0130", "+05:30"])
def test_offsets_of_every_width_read_alike(offset):
    text = f"2014-03-15T13:45:30.250{offset}"
    sign = -1 if offset.startswith("-") else 1
    digits = offset.replace(":", "")[1:] + "00"
    minutes = 0 if offset == "Z" else sign * (int(digits[:2]) * 60 + int(digits[2:4]))
    expected = T - minutes * 60_000
    for values in ([text], [text, "2014-03-15T13:45:30.25Z"]):  # fixed width, then not
        got = parse_java_datetime(values, "yyyy-MM-dd'T'HH:mm:ss.SSSZ").to_pylist()
        assert got[0] == expected


def test_time_zones():
    assert format_java_datetime([T], "yyyy-MM-dd HH:mm ZZ", "America/Los_Angeles").to_pylist() == [
        "2014-03-15 06:45 -07:00"
    ]
    assert parse_java_datetime(
        ["2014-03-15 06:45:30.250"], "yyyy-MM-dd HH:mm:ss.SSS", "America/Los_Angeles"
    ).to_pylist() == [T]
    with pytest.raises(InvalidPatternError, match="Mars/Olympus"):
        format_java_datetime([T], "yyyy", "Mars/Olympus")


@pytest.mark.parametrize(
    "text",
    [
        "1:HOURS:SIMPLE_DATE_FORMAT:yyyy-MM-dd HH tz(America/Los_Angeles)",
        "SIMPLE_DATE_FORMAT|yyyy-MM-dd HH|America/Los_Angeles",
    ],
)
def test_field_formats_with_a_time_zone(text):
    fmt = DateTimeFormat.parse(text)
    assert (fmt.pattern, fmt.timezone) == ("yyyy-MM-dd HH", "America/Los_Angeles")
    assert fmt.from_millis(pa.array([T])).to_pylist() == ["2014-03-15 06"]
    assert fmt.to_millis(pa.array(["2014-03-15 06"])).to_pylist() == [T - T % 3_600_000]
    with pytest.raises(ConfigError, match="unknown time zone 'Mars/Olympus'"):
        DateTimeFormat.parse(text.replace("America/Los_Angeles", "Mars/Olympus"))


@pytest.mark.parametrize("pattern", ["yyyy-MM-dd q", "yyyy-MM-dd'T'HH:mm:ss.SSSL", "uuuu-MM-dd"])
def test_an_unknown_letter_names_the_letter_and_the_pattern(pattern):
    letter = next(ch for ch in pattern if ch in "qLu")
    with pytest.raises(InvalidPatternError) as info:
        compile_pattern(pattern)
    assert f"'{letter}'" in str(info.value) and repr(pattern) in str(info.value)
    with pytest.raises(ConfigError, match=f"unknown pattern letter '{letter}'") as info:
        DateTimeFormat.parse(f"1:DAYS:SIMPLE_DATE_FORMAT:{pattern}", "dateTimeFieldSpecs[0].format")
    assert info.value.field == "dateTimeFieldSpecs[0].format"


def test_bad_patterns_and_values():
    with pytest.raises(InvalidPatternError, match="unterminated quote"):
        compile_pattern("yyyy'T")
    with pytest.raises(InvalidPatternError, match="printed but not parsed"):
        parse_java_datetime(["2014 11"], "yyyy ww")
    with pytest.raises(DateTimeParseError, match="'2021-02-30' has a field out of range"):
        parse_java_datetime(["2021-02-28", "2021-02-30"], "yyyy-MM-dd")
    with pytest.raises(DateTimeParseError, match="'garbage' does not match date-time pattern"):
        parse_java_datetime(["2021-02-28", "garbage"], "yyyy-MM-dd")
    with pytest.raises(DateTimeParseError, match="'24:00'"):
        parse_java_datetime(["24:00"], "HH:mm")
    assert isinstance(DateTimeParseError("x"), pa.ArrowInvalid)  # callers catch Arrow's error
