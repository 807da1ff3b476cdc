"""Pinot's low-level-consumer segment names: ``<rawTable>__<partition>__<sequence>__<time>``,
the time being the UTC creation minute as ``yyyyMMdd'T'HHmm'Z'``. A name is LLC iff it has
exactly three ``__`` separators; LLC names order by partition, then sequence."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

from engine.spi.table_name import REALTIME, raw_name_for_type

SEPARATOR = "__"
_TIME = re.compile(r"\d{8}T\d{4}Z")


@dataclasses.dataclass(frozen=True, order=True)
class LLCSegmentName:
    table: str  # the raw table name (no _REALTIME)
    partition: int
    sequence: int
    creation_time: str  # yyyyMMddTHHmmZ, UTC

    @classmethod
    def create(cls, table: str, partition: int, sequence: int,
               now_ms: int) -> LLCSegmentName:  # fmt: skip
        """A new name created at ``now_ms`` (epoch ms). ``table`` may carry ``_REALTIME``."""
        raw = raw_name_for_type(table, REALTIME)
        if SEPARATOR in raw:
            raise ValueError(f"table name {raw!r} must not contain {SEPARATOR!r}")
        if partition < 0 or sequence < 0:
            raise ValueError("partition and sequence must not be negative")
        stamp = dt.datetime.fromtimestamp(now_ms / 1000, tz=dt.UTC).strftime("%Y%m%dT%H%MZ")
        return cls(raw, int(partition), int(sequence), stamp)

    @classmethod
    def parse(cls, name: str) -> LLCSegmentName | None:
        """The parts of an LLC name, None for any other segment name."""
        parts = name.split(SEPARATOR)
        if len(parts) != 4 or not parts[0] or not _TIME.fullmatch(parts[3]):
            return None
        if not (parts[1].isdigit() and parts[2].isdigit()):
            return None
        return cls(parts[0], int(parts[1]), int(parts[2]), parts[3])

    @property
    def creation_time_ms(self) -> int:
        stamp = dt.datetime.strptime(self.creation_time, "%Y%m%dT%H%MZ").replace(tzinfo=dt.UTC)
        return int(stamp.timestamp() * 1000)

    def next(self, now_ms: int) -> LLCSegmentName:
        """The name of the partition's following segment, created at ``now_ms``."""
        return LLCSegmentName.create(self.table, self.partition, self.sequence + 1, now_ms)

    def __str__(self) -> str:
        return SEPARATOR.join(
            (self.table, str(self.partition), str(self.sequence), self.creation_time)
        )


def is_llc_segment(name: str) -> bool:
    return LLCSegmentName.parse(name) is not None
