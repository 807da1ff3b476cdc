"""Request and response shapes of the ``/tasks`` API, for validation and the OpenAPI schema."""

from __future__ import annotations

from rest_framework import serializers

from cluster.api.openapi import map_of
from tasks.logic.task_info import COUNT_KEYS, MinionTaskState


class StatusSerializer(serializers.Serializer):
    status = serializers.CharField()


class ScheduleParams(serializers.Serializer):
    taskType = serializers.CharField(required=False, allow_blank=True)
    tableName = serializers.CharField(required=False, allow_blank=True)
    minionInstanceTag = serializers.CharField(required=False, allow_blank=True)


class ScheduleResponse(serializers.Serializer):
    """Plus one key per task type: its new task names, comma-joined ("" if none)."""

    generationErrors = serializers.CharField()
    schedulingErrors = serializers.CharField()


class ExecuteRequest(serializers.Serializer):
    taskType = serializers.CharField()
    tableName = serializers.CharField()
    taskName = serializers.CharField(required=False, allow_blank=True)
    taskConfigs = serializers.DictField(child=serializers.CharField(allow_blank=True),
                                        required=False)  # fmt: skip


class ForceDeleteParams(serializers.Serializer):
    forceDelete = serializers.BooleanField(required=False, default=False)


class LockParams(serializers.Serializer):
    tableNameWithType = serializers.CharField()


class CountsParams(serializers.Serializer):
    state = serializers.CharField(required=False, allow_blank=True,
                                  help_text="comma-separated TaskStates")  # fmt: skip
    table = serializers.CharField(required=False, allow_blank=True)


class DebugParams(serializers.Serializer):
    verbosity = serializers.IntegerField(required=False, default=0)
    tableName = serializers.CharField(required=False, allow_blank=True)


class SubtaskNamesParams(serializers.Serializer):
    subtaskNames = serializers.CharField(required=False, allow_blank=True,
                                         help_text="comma-separated subtask names")  # fmt: skip


class WorkersProgressParams(serializers.Serializer):
    subTaskState = serializers.ChoiceField(
        choices=[s.value for s in MinionTaskState], required=False, allow_blank=True,
        help_text="only subtasks in this minion-side state; all of them when absent",
    )  # fmt: skip
    minionWorkerIds = serializers.CharField(required=False, allow_blank=True,
                                            help_text="comma-separated minion instance ids; "
                                            "every minion when absent")  # fmt: skip


class ProgressEntrySerializer(serializers.Serializer):
    ts = serializers.IntegerField(required=False, help_text="epoch ms; absent when unknown")
    level = serializers.ChoiceField(choices=["INFO", "WARN", "ERROR"])
    status = serializers.CharField()
    stage = serializers.CharField()


class SubtaskProgressSerializer(serializers.Serializer):
    taskId = serializers.CharField()
    taskState = serializers.ChoiceField(choices=[s.value for s in MinionTaskState])
    startTs = serializers.IntegerField(required=False, help_text="epoch ms")
    endTs = serializers.IntegerField(required=False, help_text="epoch ms")
    progress = ProgressEntrySerializer(many=True)


class SummaryParams(serializers.Serializer):
    tenant = serializers.CharField(required=False, allow_blank=True)


SubtaskCountsSerializer = type(
    "SubtaskCountsSerializer",
    (serializers.Serializer,),
    {key: serializers.IntegerField() for key in COUNT_KEYS},
)


class PinotTaskConfigSerializer(serializers.Serializer):
    taskType = serializers.CharField()
    taskId = serializers.CharField()
    tableName = serializers.CharField()
    configs = serializers.DictField(child=serializers.CharField())


class SubtaskDebugSerializer(serializers.Serializer):
    taskId = serializers.CharField()
    state = serializers.CharField(required=False)
    startTime = serializers.CharField(required=False)
    finishTime = serializers.CharField(required=False)
    participant = serializers.CharField(required=False)
    info = serializers.CharField(required=False)
    triggeredBy = serializers.CharField()
    taskConfig = PinotTaskConfigSerializer()


class TaskDebugSerializer(serializers.Serializer):
    taskState = serializers.CharField()
    subtaskCount = SubtaskCountsSerializer()
    startTime = serializers.CharField(required=False)
    executionStartTime = serializers.CharField(required=False)
    finishTime = serializers.CharField(required=False)
    triggeredBy = serializers.CharField()
    subtaskInfos = SubtaskDebugSerializer(many=True)


class RuntimeConfigSerializer(serializers.Serializer):
    ConcurrentTasksPerWorker = serializers.CharField()
    TaskTimeoutMs = serializers.CharField()
    TaskExpireTimeMs = serializers.CharField()
    MinionWorkerGroupTag = serializers.CharField()


class ZNRecordSerializer(serializers.Serializer):
    id = serializers.CharField()
    simpleFields = serializers.DictField(child=serializers.CharField())
    mapFields = serializers.DictField(child=serializers.DictField(child=serializers.CharField()))
    listFields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))


class GeneratorDebugSerializer(serializers.Serializer):
    tableNameWithType = serializers.CharField()
    taskType = serializers.CharField()
    mostRecentSuccessRunTS = serializers.ListField(child=serializers.CharField())
    mostRecentErrorRunMessages = serializers.DictField(child=serializers.CharField())


class TaskTypeBreakdownSerializer(serializers.Serializer):
    taskType = serializers.CharField()
    runningCount = serializers.IntegerField()
    waitingCount = serializers.IntegerField()


class TenantBreakdownSerializer(serializers.Serializer):
    tenant = serializers.CharField()
    runningTasks = serializers.IntegerField()
    waitingTasks = serializers.IntegerField()
    taskTypeBreakdown = TaskTypeBreakdownSerializer(many=True)


class SummarySerializer(serializers.Serializer):
    totalRunningTasks = serializers.IntegerField()
    totalWaitingTasks = serializers.IntegerField()
    taskBreakdown = TenantBreakdownSerializer(many=True)


class TaskMetadataSerializer(ZNRecordSerializer):
    """A ZNRecord, or ``{}`` (every field absent) when the table has none for the type."""

    def get_fields(self) -> dict:
        fields = super().get_fields()
        for field in fields.values():
            field.required = False
        return fields


SUBTASK_COUNTS_BY_TASK = map_of(
    SubtaskCountsSerializer, "SubtaskCountsByTask", "task name to its subtask counts"
)
TASK_DEBUG_BY_TASK = map_of(TaskDebugSerializer, "TaskDebugByTask", "task name to its debug info")
TASK_CONFIG_BY_SUBTASK = map_of(
    PinotTaskConfigSerializer, "PinotTaskConfigBySubtask", "subtask name to its config"
)
WORKERS_PROGRESS = map_of(
    map_of(SubtaskProgressSerializer, "SubtaskProgressBySubtask", "subtask name to its progress"),
    "WorkersProgress",
    "minion instance id to the subtasks it ran, by name",
)
