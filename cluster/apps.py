from django.apps import AppConfig


class ClusterConfig(AppConfig):
    name = "cluster"
    verbose_name = "Cluster metadata"

    def ready(self) -> None:
        from cluster.periodic import builtin  # noqa: F401  (registers the built-in tasks)
