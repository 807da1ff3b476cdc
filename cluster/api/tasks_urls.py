"""The ``/tasks`` routes. The literal segments (task, subtask, generator, lock, scheduler)
come before the ``<task_type>`` ones that would otherwise swallow them."""

from django.urls import path

from cluster.api import tasks as t
from cluster.api import tasks_info as i
from cluster.api import tasks_scheduler as c

urlpatterns = [
    path("tasks/tasktypes", t.TaskTypesView.as_view(), name="task-types"),
    path("tasks/summary", i.TaskSummaryView.as_view(), name="task-summary"),
    path("tasks/schedule", t.ScheduleView.as_view(), name="task-schedule"),
    path("tasks/execute", t.ExecuteView.as_view(), name="task-execute"),
    path(
        "tasks/scheduler/information",
        c.SchedulerInformationView.as_view(),
        name="task-scheduler-information",
    ),
    path(
        "tasks/scheduler/jobKeys", c.SchedulerJobKeysView.as_view(), name="task-scheduler-job-keys"
    ),
    path(
        "tasks/scheduler/jobDetails",
        c.SchedulerJobDetailsView.as_view(),
        name="task-scheduler-job-details",
    ),
    path("tasks/lock/forceRelease", t.ForceReleaseLockView.as_view(), name="task-lock-release"),
    path(
        "tasks/generator/<str:table>/<str:task_type>/debug",
        t.GeneratorDebugView.as_view(),
        name="task-generator-debug",
    ),
    path("tasks/task/<str:name>", i.TaskDeleteView.as_view(), name="task-delete"),
    path("tasks/task/<str:name>/debug", i.TaskDebugView.as_view(), name="task-debug"),
    path("tasks/task/<str:name>/state", i.TaskStateView.as_view(), name="task-state"),
    path("tasks/task/<str:name>/config", i.TaskConfigView.as_view(), name="task-config"),
    path(
        "tasks/task/<str:name>/runtime/config",
        i.TaskRuntimeConfigView.as_view(),
        name="task-runtime-config",
    ),
    path(
        "tasks/subtask/workers/progress",
        i.WorkersProgressView.as_view(),
        name="subtask-workers-progress",
    ),
    path("tasks/subtask/<str:name>/state", i.SubtaskStateView.as_view(), name="subtask-state"),
    path("tasks/subtask/<str:name>/config", i.SubtaskConfigView.as_view(), name="subtask-config"),
    path(
        "tasks/subtask/<str:name>/progress",
        i.SubtaskProgressView.as_view(),
        name="subtask-progress",
    ),
    path("tasks/<str:task_type>", t.TaskQueueView.as_view(), name="task-queue"),
    path("tasks/<str:task_type>/state", t.TaskQueueStateView.as_view(), name="task-queue-state"),
    path("tasks/<str:task_type>/stop", t.QueueStopView.as_view(), name="task-queue-stop"),
    path("tasks/<str:task_type>/resume", t.QueueResumeView.as_view(), name="task-queue-resume"),
    path("tasks/<str:task_type>/cleanup", t.QueueCleanupView.as_view(), name="task-queue-cleanup"),
    path("tasks/<str:task_type>/tasks", i.TaskListView.as_view(), name="task-list"),
    path("tasks/<str:task_type>/tasks/count", i.TaskCountView.as_view(), name="task-count"),
    path("tasks/<str:task_type>/taskstates", i.TaskStatesView.as_view(), name="task-states"),
    path("tasks/<str:task_type>/taskcounts", i.TaskCountsView.as_view(), name="task-counts"),
    path("tasks/<str:task_type>/debug", i.TypeDebugView.as_view(), name="task-type-debug"),
    path(
        "tasks/<str:task_type>/<str:table>/state",
        i.TableTaskStatesView.as_view(),
        name="task-table-states",
    ),
    path(
        "tasks/<str:task_type>/<str:table>/debug",
        i.TableTypeDebugView.as_view(),
        name="task-table-debug",
    ),
    path(
        "tasks/<str:task_type>/<str:table>/metadata",
        t.TaskMetadataView.as_view(),
        name="task-metadata",
    ),
]
