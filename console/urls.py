"""Console pages live under /console/ because the controller's REST API owns Pinot's paths
(/tables, /schemas, /tasks ...) at the root."""

from django.contrib.auth import views as auth_views
from django.urls import path

from console import consumer_lag_views, periodic_views, task_run_views, task_views, views
from console.login_views import ConsoleLoginView

urlpatterns = [
    path("", views.home, name="console-home"),
    path("console/", views.home),
    path("console/query", views.query, name="console-query"),
    path("console/cluster", views.cluster, name="console-cluster"),
    path("console/tables", views.tables, name="console-tables"),
    path("console/tables/<str:name>", views.table, name="console-table"),
    path("console/zookeeper", views.zookeeper, name="console-zookeeper"),
    path("console/tasks", periodic_views.periodic_tasks, name="console-tasks"),
    path("console/consumers", consumer_lag_views.consumers, name="console-consumers"),
    path(
        "console/consumers/<path:group>",  # Kafka allows '/' in a group id
        consumer_lag_views.consumer_group,
        name="console-consumer-group",
    ),
    path("console/consumer-lag", consumer_lag_views.consumer_lag, name="console-consumer-lag"),
    path(
        "console/minion-task-manager",
        task_views.minion_task_manager,
        name="console-minion-task-manager",
    ),
    path("console/task-queue/<str:task_type>", task_views.task_queue, name="console-task-queue"),
    path(
        "console/task-queue/<str:task_type>/tables/<str:table>",
        task_views.task_table,
        name="console-task-table",
    ),
    path(
        "console/task-queue/<str:task_type>/tables/<str:table>/task/<str:task>",
        task_views.task_detail,
        name="console-task-detail",
    ),
    path(
        "console/task-queue/<str:task_type>/tables/<str:table>/task/<str:task>/sub-task/<str:subtask>",
        task_run_views.subtask_detail,
        name="console-subtask-detail",
    ),
    path(
        "console/task-queue/<str:task_type>/tables/<str:table>/history",
        task_run_views.task_history,
        name="console-task-history",
    ),
    path("console/login", ConsoleLoginView.as_view(), name="console-login"),
    path(
        "console/logout",
        auth_views.LogoutView.as_view(next_page="console-login"),
        name="console-logout",
    ),
]
