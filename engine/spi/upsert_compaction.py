"""Which completed segments of an upsert table UpsertCompactionTask acts on, by its thresholds
in the table config (``task.taskTypeConfigsMap.UpsertCompactionTask``), with Pinot's key
names, defaults and messages (``UpsertCompactionTaskGenerator``):

- ``invalidRecordsThresholdPercent`` (0.0, 0 to 100) and ``invalidRecordsThresholdCount``
  (1, at least 1): one of them must be set; a segment is compacted when its invalid docs
  reach both, inclusive;
- a segment whose docs are all invalid (an empty one too, as Pinot) is deleted instead of
  rewritten, except the newest completed segment of its partition, which is kept: its end
  offset is where the partition's next segment starts (Pinot deletes it too);
- ``validDocIdsType`` (SNAPSHOT): which valid-doc bitmaps the counts come from.

The one home of this rule: the task generator (``tasks/generators/upsert_compaction.py``) and
the console's table page (``cluster/logic/upsert_status.py``) both use it.
"""

from __future__ import annotations

import dataclasses
import enum

from engine.common.errors import ConfigError

TASK_TYPE = "UpsertCompactionTask"
PERCENT_KEY = "invalidRecordsThresholdPercent"
COUNT_KEY = "invalidRecordsThresholdCount"
VALID_DOC_IDS_TYPE = "validDocIdsType"
VALID_DOC_IDS_TYPES = ("SNAPSHOT", "SNAPSHOT_WITH_DELETE", "IN_MEMORY", "IN_MEMORY_WITH_DELETE")
TASK_MAP = "task.taskTypeConfigsMap"


class Verdict(enum.StrEnum):
    COMPACT = "COMPACT"  # rewrite without its invalid docs
    DELETE = "DELETE"  # every doc invalid: delete the segment
    KEEP = "KEEP"  # below a threshold, or all invalid but its partition's newest


@dataclasses.dataclass(frozen=True)
class CompactionThresholds:
    percent: float = 0.0
    count: int = 1
    valid_doc_ids_type: str = "SNAPSHOT"
    configured: bool = False  # whether the table config has the task at all

    @classmethod
    def of(cls, table_config: dict) -> CompactionThresholds:
        """From a table config's JSON (Pinot's defaults without the task); ConfigError naming
        the key (``task.taskTypeConfigsMap.UpsertCompactionTask.<key>``) for a bad value."""
        tasks = ((table_config.get("task") or {}).get("taskTypeConfigsMap")) or {}
        raw = tasks.get(TASK_TYPE)
        if not isinstance(raw, dict):
            return cls()
        try:
            return cls.of_task(raw)
        except ConfigError as exc:
            raise ConfigError(f"{TASK_MAP}.{exc.field}", exc.message) from None

    @classmethod
    def of_task(cls, task_config: dict) -> CompactionThresholds:
        """From the task's own config map; ConfigError naming ``UpsertCompactionTask.<key>``
        (``UpsertCompactionTask`` when neither threshold is set), with Pinot's messages."""
        kind = str(task_config.get(VALID_DOC_IDS_TYPE) or "SNAPSHOT").strip().upper()
        if kind not in VALID_DOC_IDS_TYPES:
            raise ConfigError(_key(VALID_DOC_IDS_TYPE),
                              f"must be one of {', '.join(VALID_DOC_IDS_TYPES)}")  # fmt: skip
        percent = task_number(task_config, PERCENT_KEY, float, "a number")
        count = task_number(task_config, COUNT_KEY, int, "an integer")
        if percent is None and count is None:
            raise ConfigError(TASK_TYPE, f"{PERCENT_KEY} or {COUNT_KEY} or both must be provided")
        if percent is not None and not 0 <= percent <= 100:
            raise ConfigError(_key(PERCENT_KEY), f"{PERCENT_KEY} must be >= 0 and <= 100")
        if count is not None and count < 1:
            raise ConfigError(_key(COUNT_KEY), f"{COUNT_KEY} must be >= 1")
        return cls(percent or 0.0, 1 if count is None else count, kind, configured=True)

    def verdict(self, total_docs: int, invalid_docs: int, *, newest: bool = False) -> Verdict:
        """What the task does with a completed segment of ``total_docs`` docs of which
        ``invalid_docs`` are invalid (both thresholds inclusive); ``newest``: the segment is
        its partition's newest completed one, never deleted."""
        if invalid_docs >= total_docs:  # Pinot's rule, so an empty segment too
            return Verdict.KEEP if newest else Verdict.DELETE
        percent = 100.0 * invalid_docs / total_docs
        if percent >= self.percent and invalid_docs >= self.count:
            return Verdict.COMPACT
        return Verdict.KEEP


def _key(key: str) -> str:
    return f"{TASK_TYPE}.{key}"


def task_number(task_config: dict, key: str, parse, what: str):
    """``parse`` of the task config's ``key`` (None when absent or empty); ConfigError naming
    ``UpsertCompactionTask.<key>`` when it is not ``what``."""
    raw = task_config.get(key)
    if raw in (None, ""):
        return None
    try:
        return parse(str(raw).strip())
    except ValueError:
        raise ConfigError(_key(key), f"{raw!r} is not {what}") from None
