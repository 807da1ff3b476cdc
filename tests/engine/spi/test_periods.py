"""Pinot's period strings and data sizes, read once for the controller, minions and engine.

The controller and the stream config once had a copy each, and only the controller's took the
``P`` (petabyte) unit of Pinot's ``DataSizeUtils``. These cases pin Pinot's syntax, where ours
reaches past it, and that the stream config reads what the controller reads."""

from __future__ import annotations

import re

import pytest

from engine.spi.periods import data_size_bytes, period_ms
from engine.stream.config import parse_stream_config

DAY, HOUR, MINUTE = 86_400_000, 3_600_000, 60_000


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        # Pinot's TimeUtils: d, h, m, s in that order, any case
        ("7d", 7 * DAY),
        ("4h30m", 4 * HOUR + 30 * MINUTE),
        ("1d2h3m4s", DAY + 2 * HOUR + 3 * MINUTE + 4000),
        ("1D", DAY),
        ("6H", 6 * HOUR),
        ("0d", 0),
        # beyond Pinot: milliseconds, any order, repeats add up, blanks
        ("500ms", 500),
        ("1s500ms", 1500),
        ("30m4h", 4 * HOUR + 30 * MINUTE),
        ("1h1h", 2 * HOUR),
        (" 1h 30m ", HOUR + 30 * MINUTE),
    ],
)
def test_periods_pinot_reads_and_our_extensions(text: str, ms: int) -> None:
    assert period_ms(text) == ms


@pytest.mark.parametrize(
    "text",
    ["P1D", "PT1H", "p1d", "1.5h", "-1d", "+1d", "", "  ", "1w", "1", "h", "soon", "1h30", "1 d x"],
)
def test_not_a_period_is_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid period {text!r}")):
        period_ms(text)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("140G", 140 * 1024**3),
        ("10.5K", 10_752),
        ("10.5KB", 10_752),
        ("40B", 40),
        ("2048", 2048),
        ("1.5g", 3 * 1024**3 // 2),
        ("2T", 2 * 1024**4),
        # the unit the stream config's copy refused
        ("1P", 1024**5),
        ("3pb", 3 * 1024**5),
        # rounded down, as Pinot's cast to long does
        ("1.0001K", 1024),
        (" 200 M ", 200 * 1024**2),
    ],
)
def test_data_sizes_pinot_reads(text: str, size: int) -> None:
    assert data_size_bytes(text) == size


@pytest.mark.parametrize("text", ["lots", "", "1E", "1KiB", "-1G", "1.G", ".5G", "1GG", "G"])
def test_not_a_data_size_is_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid data size {text!r}")):
        data_size_bytes(text)


def test_the_stream_config_reads_the_same_sizes_and_periods() -> None:
    stream = parse_stream_config({
        "streamType": "kafka",
        "stream.kafka.topic.name": "events",
        "stream.kafka.decoder.class.name":
            "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder",
        "realtime.segment.flush.threshold.segment.size": "1P",
        "realtime.segment.flush.threshold.time": "1D",
    })  # fmt: skip
    assert stream.flush.segment_size_bytes == 1024**5
    assert stream.flush.time_ms == DAY
