"""Request and response shapes of the ``/tasks`` API, for validation and the OpenAPI schema."""

from __future__ import annotations

from drf_spectacular.plumbing import build_array_type, build_basic_type, build_object_type
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers

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


def string_map(description: str) -> dict:
    """The schema of a ``{name: string}`` map (e.g. task name to TaskState)."""
    schema = build_object_type(additionalProperties=build_basic_type(OpenApiTypes.STR))
    return {**schema, "description": description}


STRING_LIST = build_array_type(build_basic_type(OpenApiTypes.STR))


def map_of(component: str, description: str) -> dict:
    """The schema of a ``{name: <component>}`` map; the component is a serializer above
    (drf-spectacular names it without the Serializer suffix)."""
    return {**build_object_type(additionalProperties={"$ref": f"#/components/schemas/{component}"}),
            "description": description}  # fmt: skip


# ``{minion id: {subtask name: SubtaskProgress}}``
WORKERS_PROGRESS = {
    **build_object_type(additionalProperties=build_object_type(
        additionalProperties={"$ref": "#/components/schemas/SubtaskProgress"})),
    "description": "minion instance id to the subtasks it ran, by name",
}  # fmt: skip
