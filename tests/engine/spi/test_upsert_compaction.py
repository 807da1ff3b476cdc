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


def test_a_partitions_newest_segment_is_never_deleted():
    thresholds = CompactionThresholds()
    assert thresholds.verdict(100, 100, newest=True) is Verdict.KEEP
    assert thresholds.verdict(100, 60, newest=True) is Verdict.COMPACT  # rewritten, kept
    assert thresholds.verdict(0, 0) is Verdict.DELETE  # empty: Pinot deletes it too
    assert thresholds.verdict(0, 0, newest=True) is Verdict.KEEP


@pytest.mark.parametrize(("task", "field", "message"), [
    ({"validDocIdsType": "SNAPSHOT"}, "UpsertCompactionTask",
     "invalidRecordsThresholdPercent or invalidRecordsThresholdCount or both must be provided"),
    ({"invalidRecordsThresholdPercent": "100.5"}, "UpsertCompactionTask.invalidRecordsThreshold"
     "Percent", "invalidRecordsThresholdPercent must be >= 0 and <= 100"),
    ({"invalidRecordsThresholdCount": "2.5"}, "UpsertCompactionTask.invalidRecordsThresholdCount",
     "'2.5' is not an integer"),
])  # fmt: skip
def test_the_task_configs_own_rules(task, field, message):
    with pytest.raises(ConfigError) as raised:
        CompactionThresholds.of_task(task)
    assert (raised.value.field, raised.value.message) == (field, message)
    with pytest.raises(ConfigError, match=f"task.taskTypeConfigsMap.{field}"):
        CompactionThresholds.of(config(**task))
