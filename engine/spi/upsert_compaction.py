"""Which completed segments of an upsert table UpsertCompactionTask would act on, by its
thresholds in the table config (``task.taskTypeConfigsMap.UpsertCompactionTask``), with
Pinot's key names and defaults (``UpsertCompactionTaskGenerator``):

- ``invalidRecordsThresholdPercent`` (default 0.0) and ``invalidRecordsThresholdCount``
  (default 1): a segment is compacted when its invalid docs reach both, inclusive;
- a segment whose docs are all invalid is deleted instead of rewritten;
- ``validDocIdsType`` (default SNAPSHOT): which valid-doc bitmaps the counts come from.

The one home of this rule: the task generator and the console's table page both use it.
"""

from __future__ import annotations

import dataclasses
import enum

from engine.common.errors import ConfigError

TASK_TYPE = "UpsertCompactionTask"
VALID_DOC_IDS_TYPES = ("SNAPSHOT", "SNAPSHOT_WITH_DELETE", "IN_MEMORY", "IN_MEMORY_WITH_DELETE")


class Verdict(enum.StrEnum):
    COMPACT = "COMPACT"  # rewrite without its invalid docs
    DELETE = "DELETE"  # every doc invalid: delete the segment
    KEEP = "KEEP"  # below a threshold


@dataclasses.dataclass(frozen=True)
class CompactionThresholds:
    percent: float = 0.0
    count: float = 1
    valid_doc_ids_type: str = "SNAPSHOT"
    configured: bool = False  # whether the table config has the task at all

    @classmethod
    def of(cls, table_config: dict) -> CompactionThresholds:
        """From a table config's JSON; ConfigError (naming the key) for a value that is not a
        non-negative number or not a known validDocIdsType."""
        tasks = ((table_config.get("task") or {}).get("taskTypeConfigsMap")) or {}
        raw = tasks.get(TASK_TYPE)
        if not isinstance(raw, dict):
            return cls()
        path = f"task.taskTypeConfigsMap.{TASK_TYPE}"
        kind = str(raw.get("validDocIdsType") or "SNAPSHOT").upper()
        if kind not in VALID_DOC_IDS_TYPES:
            raise ConfigError(
                f"{path}.validDocIdsType", f"must be one of {', '.join(VALID_DOC_IDS_TYPES)}"
            )
        return cls(
            percent=_threshold(raw, "invalidRecordsThresholdPercent", 0.0, path),
            count=_threshold(raw, "invalidRecordsThresholdCount", 1, path),
            valid_doc_ids_type=kind,
            configured=True,
        )

    def verdict(self, total_docs: int, invalid_docs: int) -> Verdict:
        """What the task does with a completed segment of ``total_docs`` docs of which
        ``invalid_docs`` are invalid (both thresholds inclusive)."""
        if invalid_docs >= total_docs:  # Pinot's rule, so an empty segment too
            return Verdict.DELETE
        percent = 100.0 * invalid_docs / total_docs
        if percent >= self.percent and invalid_docs >= self.count:
            return Verdict.COMPACT
        return Verdict.KEEP


def _threshold(raw: dict, key: str, default: float, path: str) -> float:
    value = raw.get(key)
    if value in (None, ""):
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{path}.{key}", f"{value!r} is not a number") from None
    if number < 0:
        raise ConfigError(f"{path}.{key}", f"must not be negative, got {value!r}")
    return number
