"""The controller's periodic task of lag monitoring, registered by the app, which stands above
cluster, so the controller's periodic-task registry knows nothing of it."""

from __future__ import annotations

from cluster.periodic import PeriodicTask, register


def _consumer_lag_alerts(store, rows):
    from monitoring.logic.alert_rules import evaluate_all

    return evaluate_all()


def register_periodic_tasks() -> None:
    register(PeriodicTask("ConsumerLagAlertEvaluator", _consumer_lag_alerts, "1m",
                          "evaluates the consumer-lag alert rules over the consumer_offsets "
                          "table and records (and POSTs) firing/resolved transitions"))  # fmt: skip
