"""The controller's periodic tasks: its own, and the minion task manager's two runs (tasks
stands below cluster, so they are wired in here rather than registering themselves)."""

from __future__ import annotations

from cluster.logic.apply_retention import apply_retention
from cluster.logic.check_segment_status import check_segment_status
from cluster.logic.reconcile_state import reconcile_state
from cluster.logic.relocate_segments import relocate_segments
from cluster.periodic.registry import PeriodicTask, register
from tasks.controller import pinot_task_manager, task_metrics_emitter


def _retention(store, rows):
    return apply_retention(store, rows)


def _status(store, rows):
    return check_segment_status(store, [row.name_with_type for row in rows])


def _reconcile(store, rows):
    return reconcile_state(store)


register(PeriodicTask("RetentionManager", _retention, "6h",
                      "deletes segments older than the table's retention"))  # fmt: skip
register(PeriodicTask("SegmentStatusChecker", _status, "5m",
                      "replicas online per segment and segments in ERROR"))  # fmt: skip
register(PeriodicTask("ClusterStateReconciler", _reconcile, "10m",
                      "re-publishes schemas and table configs to ZooKeeper, reports drift"))  # fmt: skip


def _realtime_validation(store, rows):
    # imported here: the stream client is only needed by this task
    from cluster.logic.cluster_view import replication_of, table_servers
    from cluster.logic.realtime.ensure_consuming import ensure_partitions_consuming
    from engine.common.errors import EngineError
    from engine.spi import TableConfig
    from engine.stream.config import table_stream_configs
    from engine.stream.kafka import KafkaMetadataProvider

    report = {}
    for row in rows:
        if row.table_type != "REALTIME":
            continue
        table = row.name_with_type
        try:
            config = TableConfig.from_json(row.config)
            stream = table_stream_configs(config)[0]
            servers = table_servers(store, config)
            report[table] = ensure_partitions_consuming(
                store, config, servers, replication_of(config, servers),
                KafkaMetadataProvider(stream, f"sprig-validation-{config.table_name}"),
            )  # fmt: skip
        except (EngineError, ValueError) as exc:  # one table's stream must not stop the others
            report[table] = [f"not validated: {exc}"]
    return report


register(PeriodicTask("RealtimeSegmentValidationManager", _realtime_validation, "1h",
                      "every partition of a REALTIME table has one CONSUMING segment: new "
                      "partitions, deleted consuming segments, OFFLINE replicas, half-done "
                      "commits"))  # fmt: skip


register(PeriodicTask("SegmentRelocator", relocate_segments, "1h",
                      "moves completed segments of REALTIME tables to the servers tagged "
                      "tenants.tagOverrideConfig.realtimeCompleted, make-before-break"))  # fmt: skip


register(PeriodicTask("PinotTaskManager", pinot_task_manager, "-1s",
                      "generates every configured minion task type on every table"))  # fmt: skip
register(PeriodicTask("TaskMetricsEmitter", task_metrics_emitter, "5m",
                      "minion task and subtask counts per type and table"))  # fmt: skip
