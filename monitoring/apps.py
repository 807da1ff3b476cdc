from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """The controller side of consumer-lag monitoring: alert rules and their events in the
    database, the REST API, and the periodic alert evaluation. The plain modules of the
    package (decoder, evaluation, collector, history SQL) stay free of Django."""

    name = "monitoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from cluster.api.metrics import register_metrics_source
        from monitoring.logic.metrics import prometheus_lines
        from monitoring.periodic import register_periodic_tasks

        register_periodic_tasks()
        register_metrics_source(prometheus_lines)
