"""The built-in task types (one registration each; see tasks.registry)."""

from tasks.registry import register

register(
    "SegmentGenerationAndPushTask",
    generator="tasks.generators.segment_generation_and_push:SegmentGenerationAndPushTaskGenerator",
    executor="tasks.executors.segment_generation_and_push:SegmentGenerationAndPushTaskExecutor",
)
register(
    "PurgeTask",
    generator="tasks.generators.purge:PurgeTaskGenerator",
    executor="tasks.executors.purge:PurgeTaskExecutor",
)
register(
    "RealtimeToOfflineSegmentsTask",
    generator="tasks.generators.realtime_to_offline:RealtimeToOfflineSegmentsTaskGenerator",
    executor="tasks.executors.realtime_to_offline:RealtimeToOfflineSegmentsTaskExecutor",
)
register(
    "MergeRollupTask",
    generator="tasks.generators.merge_rollup:MergeRollupTaskGenerator",
    executor="tasks.executors.merge_rollup:MergeRollupTaskExecutor",
)
register(
    "UpsertCompactionTask",
    generator="tasks.generators.upsert_compaction:UpsertCompactionTaskGenerator",
    executor="tasks.executors.upsert_compaction:UpsertCompactionTaskExecutor",
)
