"""``/tasks`` reads: tasks of a type, their states, counts and debug info, one task's state,
configs and runtime config, and its subtasks' states, configs and progress."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api import tasks_serializers as s
from cluster.api.common import query, store
from cluster.api.openapi import STRING_LIST, string_map
from tasks.logic import task_info
from tasks.logic.dispatch import minion_instance_ids
from tasks.logic.queue_ops import delete_task, get_queue

TAG = ["Task"]
STATE_MAP = string_map("task or subtask name to its state")


def _names(raw: str | None) -> list[str] | None:
    names = [name.strip() for name in (raw or "").split(",") if name.strip()]
    return names or None


class TaskListView(APIView):
    @extend_schema(summary="Tasks of a type", tags=TAG,
                   responses={200: STRING_LIST})  # fmt: skip
    def get(self, request, task_type: str):
        return Response(list(get_queue(task_type).tasks.values_list("name", flat=True)))


class TaskCountView(APIView):
    @extend_schema(summary="Number of tasks of a type", tags=TAG,
                   responses={200: OpenApiTypes.INT})  # fmt: skip
    def get(self, request, task_type: str):
        return Response(get_queue(task_type).tasks.count())


class TaskStatesView(APIView):
    @extend_schema(summary="TaskState of every task of a type", tags=TAG,
                   responses={200: STATE_MAP})  # fmt: skip
    def get(self, request, task_type: str):
        return Response(task_info.task_states(task_type))


class TableTaskStatesView(APIView):
    @extend_schema(summary="TaskState of the tasks of a type with a subtask on a table",
                   tags=TAG, responses={200: STATE_MAP}, operation_id="tasks_table_state")  # fmt: skip
    def get(self, request, task_type: str, table: str):
        return Response(task_info.task_states(task_type, table))


class TaskCountsView(APIView):
    @extend_schema(
        summary="Subtask counts per task of a type",
        description="waiting: no minion took it yet; running: INIT or RUNNING.",
        tags=TAG, parameters=[s.CountsParams],
        responses={200: s.SUBTASK_COUNTS_BY_TASK},
    )  # fmt: skip
    def get(self, request, task_type: str):
        params = query(request, s.CountsParams)
        return Response(task_info.task_counts(task_type, _names(params.get("state")),
                                              params.get("table") or None))  # fmt: skip


class TypeDebugView(APIView):
    @extend_schema(summary="Debug info of every task of a type", tags=TAG,
                   parameters=[s.DebugParams],
                   responses={200: s.TASK_DEBUG_BY_TASK})  # fmt: skip
    def get(self, request, task_type: str, table: str | None = None):
        params = query(request, s.DebugParams)
        return Response(task_info.type_debug(task_type, params["verbosity"], table))


class TableTypeDebugView(TypeDebugView):
    @extend_schema(summary="Debug info of the tasks of a type on a table", tags=TAG,
                   operation_id="tasks_table_debug",
                   parameters=[s.DebugParams],
                   responses={200: s.TASK_DEBUG_BY_TASK})  # fmt: skip
    def get(self, request, task_type: str, table: str | None = None):
        return super().get(request, task_type, table)


class TaskDebugView(APIView):
    @extend_schema(
        summary="Debug info of one task",
        description="Times are `yyyy-MM-dd HH:mm:ss z` (UTC); COMPLETED subtasks only with "
        "verbosity>0; `info` is the error cut to 1000 characters: its first line and its "
        "tail, where a traceback names the exception, are kept.",
        tags=TAG, parameters=[s.DebugParams], responses={200: s.TaskDebugSerializer},
    )  # fmt: skip
    def get(self, request, name: str):
        params = query(request, s.DebugParams)
        task = task_info.get_task(name)
        return Response(task_info.task_debug(task, params["verbosity"],
                                             params.get("tableName") or None))  # fmt: skip


class TaskStateView(APIView):
    @extend_schema(summary="TaskState of one task (a bare JSON string)", tags=TAG,
                   responses={200: OpenApiTypes.STR})  # fmt: skip
    def get(self, request, name: str):
        return Response(task_info.get_task(name).state)


class TaskConfigView(APIView):
    @extend_schema(summary="The PinotTaskConfig of every subtask of a task", tags=TAG,
                   responses={200: s.PinotTaskConfigSerializer(many=True)})  # fmt: skip
    def get(self, request, name: str):
        task = task_info.get_task(name)
        return Response([task_info.pinot_task_config(sub, task.task_type)
                         for sub in task.subtasks.all()])  # fmt: skip


class TaskRuntimeConfigView(APIView):
    @extend_schema(summary="A task's runtime settings", tags=TAG,
                   responses={200: s.RuntimeConfigSerializer})  # fmt: skip
    def get(self, request, name: str):
        return Response(task_info.runtime_config(task_info.get_task(name)))


class TaskDeleteView(APIView):
    @extend_schema(summary="Delete one task",
                   description="Only after its queue is stopped, unless forceDelete=true.",
                   tags=TAG, parameters=[s.ForceDeleteParams],
                   responses={200: s.StatusSerializer})  # fmt: skip
    def delete(self, request, name: str):
        params = query(request, s.ForceDeleteParams)
        return Response(delete_task(name, params["forceDelete"]))


class SubtaskStateView(APIView):
    @extend_schema(summary="State of every subtask of a task (null until a minion takes it)",
                   tags=TAG, responses={200: STATE_MAP})  # fmt: skip
    def get(self, request, name: str):
        task = task_info.get_task(name)
        return Response({sub.name: sub.state for sub in task.subtasks.all()})


class SubtaskConfigView(APIView):
    @extend_schema(summary="PinotTaskConfig of a task's subtasks", tags=TAG,
                   parameters=[s.SubtaskNamesParams],
                   responses={200: s.TASK_CONFIG_BY_SUBTASK})  # fmt: skip
    def get(self, request, name: str):
        task = task_info.get_task(name)
        names = _names(query(request, s.SubtaskNamesParams).get("subtaskNames"))
        return Response({sub.name: task_info.pinot_task_config(sub, task.task_type)
                         for sub in task_info.subtasks_of(task, names)})  # fmt: skip


class SubtaskProgressView(APIView):
    @extend_schema(summary="The last progress each subtask's minion reported", tags=TAG,
                   parameters=[s.SubtaskNamesParams],
                   responses={200: string_map("subtask name to its progress")})  # fmt: skip
    def get(self, request, name: str):
        task = task_info.get_task(name)
        names = _names(query(request, s.SubtaskNamesParams).get("subtaskNames"))
        return Response({sub.name: sub.progress for sub in task_info.subtasks_of(task, names)})


class WorkersProgressView(APIView):
    @extend_schema(
        summary="Per minion, the progress of the subtasks it ran",
        description="Pinot's shape, `{minionId: {subtaskName: {taskId, taskState, startTs, "
        "endTs, progress: [{ts, level, status, stage}]}}}`, read from the controller's task "
        "store (which the minions report into) rather than from each minion. Every registered "
        "minion is listed, with `{}` if it ran nothing in the state asked for.",
        tags=TAG, parameters=[s.WorkersProgressParams],
        responses={200: s.WORKERS_PROGRESS}, operation_id="tasks_subtask_workers_progress",
    )  # fmt: skip
    def get(self, request):
        params = query(request, s.WorkersProgressParams)
        state = params.get("subTaskState") or None
        return Response(task_info.worker_progress(
            minion_instance_ids(store()), task_info.MinionTaskState(state) if state else None,
            _names(params.get("minionWorkerIds")),
        ))  # fmt: skip


class TaskSummaryView(APIView):
    @extend_schema(summary="Running and waiting subtasks per minion tag and type", tags=TAG,
                   parameters=[s.SummaryParams], responses={200: s.SummarySerializer})  # fmt: skip
    def get(self, request):
        return Response(task_info.summary(query(request, s.SummaryParams).get("tenant") or None))
