"""The SparkSession of a minion worker process: started once (at worker start when
``SPRIG_MINION_SPARK_PREWARM`` is true, else on the first subtask that needs it) and reused by
every subtask, so no subtask pays Spark's ~10 s start-up."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_session = None


def minion_spark():
    """This process's SparkSession on $SPRIG_SPARK_MASTER (default local[*])."""
    global _session
    with _lock:
        if _session is None:
            from spark_jobs.session import spark_session

            _session = spark_session(app_name="sprig-minion")
        return _session


def stop_minion_spark() -> None:
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
        _session = None
