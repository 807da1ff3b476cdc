"""``/tasks``: task types, queues and their operations, scheduling and ad-hoc runs, task
metadata (watermarks) and the generation lock, at Pinot's paths and in its shapes."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api import tasks_serializers as s
from cluster.api.common import json_body, query, store
from controller.errors import BadRequest, NotFound
from tasks import registry
from tasks.logic import queue_ops, task_info
from tasks.logic.generate import generator_history
from tasks.logic.generation_lock import force_release
from tasks.logic.schedule import execute_adhoc, schedule_tasks
from tasks.metadata import delete_metadata, read_metadata
from tasks.states import TriggeredBy

TAG = ["Task"]


class TaskTypesView(APIView):
    @extend_schema(summary="Task types with a queue", tags=TAG,
                   responses={200: s.STRING_LIST})  # fmt: skip
    def get(self, request):
        return Response(task_info.task_types())


class TaskQueueStateView(APIView):
    @extend_schema(summary="The TaskState of a task type's queue (a bare JSON string)",
                   tags=TAG, responses={200: OpenApiTypes.STR})  # fmt: skip
    def get(self, request, task_type: str):
        return Response(task_info.queue_state(task_type))


def _queue_op(summary: str, op):
    class View(APIView):
        @extend_schema(summary=summary, tags=TAG, request=None,
                       responses={200: s.StatusSerializer})  # fmt: skip
        def put(self, request, task_type: str):
            return Response(op(task_type))

    return View


QueueStopView = _queue_op("Stop a task type's queue: no new subtask is sent",
                          queue_ops.stop_queue)  # fmt: skip
QueueResumeView = _queue_op("Resume a stopped queue", queue_ops.resume_queue)
QueueCleanupView = _queue_op("Remove a queue's finished tasks", queue_ops.cleanup_queue)


class TaskQueueView(APIView):
    @extend_schema(
        summary="Delete a task type's queue and all its tasks",
        description="Without forceDelete the queue must be stopped or have no unfinished task.",
        tags=TAG, parameters=[s.ForceDeleteParams], responses={200: s.StatusSerializer},
    )  # fmt: skip
    def delete(self, request, task_type: str):
        params = query(request, s.ForceDeleteParams)
        return Response(queue_ops.delete_queue(task_type, params["forceDelete"]))


class ScheduleView(APIView):
    @extend_schema(
        summary="Generate and schedule tasks now",
        description="Every configured table and type, narrowed by taskType, tableName and "
        "minionInstanceTag. The answer maps each type to its new task names, comma-joined "
        '("" when there was nothing to do; absent when it failed), plus generationErrors '
        "and schedulingErrors.",
        tags=TAG, parameters=[s.ScheduleParams], request=None,
        responses={200: s.ScheduleResponse},
    )  # fmt: skip
    def post(self, request):
        params = query(request, s.ScheduleParams)
        try:
            outcome = schedule_tasks(
                store(), task_type=params.get("taskType") or None,
                table_name=params.get("tableName") or None,
                minion_tag=params.get("minionInstanceTag") or None,
                triggered_by=TriggeredBy.MANUAL_TRIGGER,
            )  # fmt: skip
        except registry.UnknownTaskTypeError as exc:
            raise BadRequest(str(exc)) from None
        return Response(outcome.response())


class ExecuteView(APIView):
    @extend_schema(
        summary="Run an ad-hoc task",
        description="taskConfigs override the table's config of the type. Answers "
        "{tableNameWithType: taskName}, or {} while the queue is stopped.",
        tags=TAG, request=s.ExecuteRequest,
        responses={200: s.string_map("tableNameWithType to the new task name")},
    )  # fmt: skip
    def post(self, request):
        body = s.ExecuteRequest(data=json_body(request))
        body.is_valid(raise_exception=True)
        data = body.validated_data
        return Response(execute_adhoc(store(), data["taskType"], data["tableName"],
                                      data.get("taskName") or None,
                                      data.get("taskConfigs") or {}))  # fmt: skip


class TaskMetadataView(APIView):
    @extend_schema(summary="A table's minion task metadata (watermarks) for a type",
                   description="The raw ZNRecord, or {} when there is none.", tags=TAG,
                   responses={200: s.ZNRecordSerializer})  # fmt: skip
    def get(self, request, task_type: str, table: str):
        record, _ = read_metadata(store(), table, task_type)
        return Response(record.to_json() if record else {})

    @extend_schema(summary="Delete a table's minion task metadata for a type", tags=TAG,
                   responses={200: s.StatusSerializer})  # fmt: skip
    def delete(self, request, task_type: str, table: str):
        if not delete_metadata(store(), table, task_type):
            raise NotFound(f"No {task_type} metadata for table {table}")
        return Response({"status": f"Successfully deleted metadata for task type: {task_type} "
                                   f"from table: {table}"})  # fmt: skip


class ForceReleaseLockView(APIView):
    @extend_schema(summary="Release a table's task generation lock by hand", tags=TAG,
                   parameters=[s.LockParams], responses={200: s.StatusSerializer})  # fmt: skip
    def delete(self, request):
        table = query(request, s.LockParams)["tableNameWithType"]
        released = force_release(store(), table)
        verb = "Successfully released" if released else "No held"
        return Response({"status": f"{verb} task generation lock for table: {table}"})


class GeneratorDebugView(APIView):
    @extend_schema(
        summary="The generator's recent runs for a table and type",
        description="One entry per controller (this one): the last 5 successful run times "
        "and the last 5 errors by time.",
        tags=TAG, responses={200: s.GeneratorDebugSerializer(many=True)},
    )  # fmt: skip
    def get(self, request, table: str, task_type: str):
        return Response([generator_history(table, task_type)])
