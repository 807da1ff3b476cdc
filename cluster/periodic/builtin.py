"""The controller's own periodic tasks."""

from __future__ import annotations

from cluster.logic.apply_retention import apply_retention
from cluster.logic.check_segment_status import check_segment_status
from cluster.logic.reconcile_state import reconcile_state
from cluster.periodic.registry import PeriodicTask, register


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
