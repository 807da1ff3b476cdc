from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """The controller side of consumer-lag monitoring: alert rules and their events in the
    database, the REST API, and the periodic alert evaluation. The plain modules of the
    package (decoder, evaluation, collector, history SQL) stay free of Django."""

    name = "monitoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from monitoring.periodic import register_periodic_tasks

        register_periodic_tasks()
