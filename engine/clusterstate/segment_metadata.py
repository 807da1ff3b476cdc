"""A segment's ZooKeeper metadata record (``PROPERTYSTORE/SEGMENTS/<table_TYPE>/<segment>``,
Pinot's ``SegmentZKMetadata``) and the one home of the rule that reads its time range as epoch
milliseconds, for the broker's pruning, retention and the minion task generators."""

from __future__ import annotations

import dataclasses
import math

from engine.clusterstate.znrecord import ZNRecord, int_field
from engine.spi.datetime_format import UNIT_MILLIS
from engine.spi.table_name import split_table_name


def segment_time_ms(value: int | None, time_unit: str | None) -> int | float | None:
    """A ``segment.start.time`` or ``segment.end.time`` in epoch milliseconds, or None when it
    is unknown, as Pinot's ``getStartTimeMs``/``getEndTimeMs`` read it: a missing or
    non-positive time is unknown (old records hold -1 with no unit), and so is a time whose
    ``segment.time.unit`` is missing or not a ``TimeUnit`` name (Pinot fails on those; no
    caller here may guess milliseconds). The value is exact: a fraction of a millisecond for
    MICROSECONDS and NANOSECONDS, so the broker never prunes a segment on a rounded bound."""
    if value is None or value <= 0:
        return None
    per_unit = UNIT_MILLIS.get((time_unit or "").upper())
    return None if per_unit is None else value * per_unit


def recorded_time_range(start, end, time_unit: str | None, start_ms, end_ms):
    """(``segment.start.time``, ``segment.end.time``, ``segment.time.unit``) to record for a
    segment whose own metadata holds its time column's range [start, end] in ``time_unit``
    and, exactly, [start_ms, end_ms] in epoch ms. Pinot records the column's raw values and
    unit, which read back right only when one value is one unit (``1:DAYS:EPOCH``). When they
    do not (``5:MINUTES:EPOCH``, where 100 means 500 minutes, or a DOUBLE column cut to an
    int), the range is recorded in MILLISECONDS instead, so that pruning, the hybrid time
    boundary, retention and the minion generators read the true range."""
    if None in (start, end, start_ms, end_ms) or not time_unit:
        return _whole(start), _whole(end), time_unit or ""
    raw_start, raw_end = _whole(start), _whole(end)
    read_start, read_end = (
        segment_time_ms(raw_start, time_unit),
        segment_time_ms(raw_end, time_unit),
    )
    if (read_start is not None and read_end is not None
            and abs(read_start - start_ms) < 1 and abs(read_end - end_ms) < 1):  # fmt: skip
        return raw_start, raw_end, time_unit
    return math.floor(start_ms), math.ceil(end_ms), "MILLISECONDS"


def _whole(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


@dataclasses.dataclass
class SegmentZKMetadata:
    """``PROPERTYSTORE/SEGMENTS/<table_TYPE>/<segment>``. Times are epoch values in
    ``time_unit`` (as in the segment's own metadata); ``*_ms`` fields are epoch milliseconds.
    ``extra`` keeps any other ``segment.*`` key (e.g. realtime offsets) untouched."""

    segment_name: str
    table_name_with_type: str
    crc: str = ""
    total_docs: int = 0
    start_time: int | None = None
    end_time: int | None = None
    time_unit: str = ""
    download_url: str = ""
    push_time_ms: int = 0
    refresh_time_ms: int = 0
    creation_time_ms: int = 0
    size_in_bytes: int = 0
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def start_time_ms(self) -> int | float | None:
        """``start_time`` in epoch ms, inclusive; None when unknown (``segment_time_ms``)."""
        return segment_time_ms(self.start_time, self.time_unit)

    @property
    def end_time_ms(self) -> int | float | None:
        """``end_time`` in epoch ms, inclusive; None when unknown (``segment_time_ms``)."""
        return segment_time_ms(self.end_time, self.time_unit)

    def to_record(self) -> ZNRecord:
        simple = dict(self.extra)
        simple.update(
            {
                "segment.name": self.segment_name,
                "segment.table.name": self.table_name_with_type,
                "segment.crc": self.crc,
                "segment.total.docs": str(self.total_docs),
                "segment.time.unit": self.time_unit,
                "segment.download.url": self.download_url,
                "segment.push.time": str(self.push_time_ms),
                "segment.refresh.time": str(self.refresh_time_ms),
                "segment.creation.time": str(self.creation_time_ms),
                "segment.size.in.bytes": str(self.size_in_bytes),
                "segment.type": split_table_name(self.table_name_with_type)[1] or "",
            }
        )
        if self.start_time is not None:
            simple["segment.start.time"] = str(self.start_time)
        if self.end_time is not None:
            simple["segment.end.time"] = str(self.end_time)
        return ZNRecord(id=self.segment_name, simple_fields=simple)

    @classmethod
    def from_record(cls, record: ZNRecord, table_name_with_type: str) -> SegmentZKMetadata:
        simple = dict(record.simple_fields)
        known = {
            "segment.name", "segment.table.name", "segment.crc", "segment.total.docs",
            "segment.time.unit", "segment.download.url", "segment.push.time",
            "segment.refresh.time", "segment.creation.time", "segment.size.in.bytes",
            "segment.type", "segment.start.time", "segment.end.time",
        }  # fmt: skip
        start, end = simple.get("segment.start.time"), simple.get("segment.end.time")
        return cls(
            segment_name=record.id,
            table_name_with_type=simple.get("segment.table.name", table_name_with_type),
            crc=simple.get("segment.crc", ""),
            total_docs=int_field(simple.get("segment.total.docs"), 0),
            start_time=int_field(start, None) if start not in (None, "") else None,
            end_time=int_field(end, None) if end not in (None, "") else None,
            time_unit=simple.get("segment.time.unit", ""),
            download_url=simple.get("segment.download.url", ""),
            push_time_ms=int_field(simple.get("segment.push.time"), 0),
            refresh_time_ms=int_field(simple.get("segment.refresh.time"), 0),
            creation_time_ms=int_field(simple.get("segment.creation.time"), 0),
            size_in_bytes=int_field(simple.get("segment.size.in.bytes"), 0),
            extra={k: v for k, v in simple.items() if k not in known},
        )

    def to_json(self) -> dict:
        """The ZNRecord's simple fields, as Pinot's ``/segments/{t}/zkmetadata`` shows them."""
        return self.to_record().simple_fields
