"""The hybrid-table time boundary: where OFFLINE data ends and REALTIME data takes over.

boundary = the largest end time of the OFFLINE segments being served, minus one push
frequency unit (an hour for HOURLY pushes, else a day), written in the time column's own
format. The OFFLINE table answers ``time <= boundary`` and the REALTIME table
``time > boundary``, so every row is counted once.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from engine.broker.routes import TableRoute


@dataclasses.dataclass(frozen=True)
class TimeBoundary:
    column: str
    value: object  # in the column's format: an epoch count, epoch ms, or a date string
    boundary_ms: int

    def to_json(self) -> dict:
        """The shape of Pinot's ``GET /debug/timeBoundary/{table}``."""
        return {"timeColumn": self.column, "timeValue": str(self.value)}

    def clause(self, table_type: str) -> dict:
        """The filter the server adds for ``table_type`` (see engine.query.time_boundary)."""
        op = "<=" if table_type == "OFFLINE" else ">"
        return {"column": self.column, "op": op, "value": self.value}


def compute_time_boundary(offline: TableRoute) -> TimeBoundary | None:
    """None when the OFFLINE table has no served segment with a time range, or no time
    column with a known format."""
    if offline.time_column is None or offline.time_format is None:
        return None
    ends = [
        info.end_ms
        for name, info in offline.segments.items()
        if info.end_ms is not None and offline.segment_servers.get(name)
    ]
    if not ends:
        return None
    boundary_ms = int(max(ends)) - offline.push_frequency_ms
    value = offline.time_format.from_millis(pa.array([boundary_ms], pa.int64()))[0].as_py()
    return TimeBoundary(offline.time_column, value, boundary_ms)
