"""What the controller and the minions agree on about a subtask attempt's Celery message,
kept apart from the worker module so the controller does not import the minion's code."""

RUN_SUBTASK = "sprig.minion.run_subtask"
# the hard limit is the soft one (the subtask's timeoutMs) plus this grace, so an executor
# that ignores SoftTimeLimitExceeded is still killed
HARD_LIMIT_GRACE_S = 30
