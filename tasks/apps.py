from django.apps import AppConfig


class TasksConfig(AppConfig):
    name = "tasks"
    verbose_name = "Minion tasks"

    def ready(self) -> None:
        from django.conf import settings

        from tasks import builtin  # noqa: F401  (registers the built-in task types)
        from tasks.registry import load_plugins

        load_plugins(getattr(settings, "MINION_TASK_PLUGINS", []))
