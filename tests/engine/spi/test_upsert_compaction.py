import pytest

from engine.common.errors import ConfigError
from engine.spi.upsert_compaction import CompactionThresholds, Verdict


def config(**task) -> dict:
    return {"tableName": "t", "task": {"taskTypeConfigsMap": {"UpsertCompactionTask": task}}}


def test_pinot_defaults_without_the_task():
    thresholds = CompactionThresholds.of({"tableName": "t"})
    assert (thresholds.percent, thresholds.count, thresholds.configured) == (0.0, 1, False)
    assert thresholds.valid_doc_ids_type == "SNAPSHOT"
    assert thresholds.verdict(100, 1) is Verdict.COMPACT  # one invalid doc is enough
    assert thresholds.verdict(100, 0) is Verdict.KEEP
    assert thresholds.verdict(100, 100) is Verdict.DELETE


def test_both_thresholds_must_hold_inclusive():
    thresholds = CompactionThresholds.of(config(
        invalidRecordsThresholdPercent="30", invalidRecordsThresholdCount="50",
        validDocIdsType="in_memory",
    ))  # fmt: skip
    assert thresholds.configured and thresholds.valid_doc_ids_type == "IN_MEMORY"
    assert thresholds.verdict(200, 60) is Verdict.COMPACT  # exactly 30 %
    assert thresholds.verdict(200, 59) is Verdict.KEEP  # 29.5 %
    assert thresholds.verdict(100, 49) is Verdict.KEEP  # 49 % but below the count
    assert thresholds.verdict(100, 50) is Verdict.COMPACT
    assert thresholds.verdict(50, 50) is Verdict.DELETE  # all invalid: deleted, not rewritten


@pytest.mark.parametrize(("task", "key"), [
    ({"invalidRecordsThresholdPercent": "a lot"}, "invalidRecordsThresholdPercent"),
    ({"invalidRecordsThresholdCount": "-1"}, "invalidRecordsThresholdCount"),
    ({"validDocIdsType": "DISK"}, "validDocIdsType"),
])  # fmt: skip
def test_bad_values_name_their_key(task, key):
    with pytest.raises(ConfigError, match=f"UpsertCompactionTask.{key}"):
        CompactionThresholds.of(config(**task))
