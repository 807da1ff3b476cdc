from django.apps import AppConfig


class ClusterConfig(AppConfig):
    name = "cluster"
    verbose_name = "Cluster metadata"

    def ready(self) -> None:
        from cluster.logic.cluster_view import table_rows
        from cluster.periodic import builtin  # noqa: F401  (registers the built-in tasks)
        from tasks.tables import provide_tables

        # the task manager stands below this app and reads the table configs through it
        provide_tables(table_rows)
