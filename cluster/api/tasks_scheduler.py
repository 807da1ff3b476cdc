"""``/tasks/scheduler/*``: the cron jobs of the tables' task ``schedule``s."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from cluster.api.common import query
from tasks.logic import cron_info

TAG = ["Task"]


class JobKeySerializer(serializers.Serializer):
    name = serializers.CharField(help_text="tableNameWithType")
    group = serializers.CharField(help_text="task type")


class TriggerSerializer(serializers.Serializer):
    TriggerType = serializers.CharField()
    TimeZone = serializers.CharField()
    CronExpression = serializers.CharField()
    ExpressionSummary = serializers.CharField()
    NextFireTime = serializers.IntegerField(allow_null=True, help_text="epoch ms")
    PreviousFireTime = serializers.IntegerField(allow_null=True, help_text="epoch ms")


class JobDetailsSerializer(serializers.Serializer):
    JobKey = JobKeySerializer()
    Description = serializers.CharField()
    JobClass = serializers.CharField()
    JobDataMap = serializers.DictField(child=serializers.CharField())
    Triggers = TriggerSerializer(many=True)


class InformationSerializer(serializers.Serializer):
    Version = serializers.CharField()
    SchedulerName = serializers.CharField()
    SchedulerInstanceId = serializers.CharField()
    Started = serializers.BooleanField(help_text="true on the lead controller")
    RunningSince = serializers.IntegerField(allow_null=True)
    NumberOfJobs = serializers.IntegerField()
    NumberOfMissedFires = serializers.IntegerField()
    JobGroupNames = serializers.ListField(child=serializers.CharField())


class JobDetailsParams(serializers.Serializer):
    tableName = serializers.CharField(help_text="tableNameWithType")
    taskType = serializers.CharField()


def _instance_id() -> str:
    from django.conf import settings

    return f"Controller_{settings.CONTROLLER_HOST}_{settings.CONTROLLER_PORT}"


class SchedulerInformationView(APIView):
    @extend_schema(summary="The cron scheduler", tags=TAG,
                   responses={200: InformationSerializer})  # fmt: skip
    def get(self, request):
        from tasks.controller import cron

        return Response(cron_info.information(cron, _instance_id()))


class SchedulerJobKeysView(APIView):
    @extend_schema(summary="The cron jobs: one per table and task type with a schedule",
                   tags=TAG, responses={200: JobKeySerializer(many=True)})  # fmt: skip
    def get(self, request):
        return Response(cron_info.job_keys())


class SchedulerJobDetailsView(APIView):
    @extend_schema(summary="A cron job with its expression and previous and next fire times",
                   tags=TAG, parameters=[JobDetailsParams],
                   responses={200: JobDetailsSerializer})  # fmt: skip
    def get(self, request):
        params = query(request, JobDetailsParams)
        return Response(cron_info.job_details(params["tableName"], params["taskType"]))
