"""The SparkSession of a minion worker process: started once (at worker start when
``SPRIG_MINION_SPARK_PREWARM`` is true, else on the first subtask that needs it) and reused by
every subtask, so no subtask pays Spark's ~10 s start-up.

A new session also runs one tiny merge through the minion's own Spark path (Parquet read and
write, the driver's cut): a JVM's first jobs run interpreted and load classes, and
measured 13 s against 4 s warm for the same 2M-row merge. Without this, the first subtask in
each pool process pays that, which made one RealtimeToOffline subtask per partition (each
pool process running its first job) slower than one subtask."""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

_lock = threading.Lock()
_session = None


def _warm_up(spark) -> None:
    import pyarrow as pa

    from spark_jobs.minion.merge_rollup import MergeSpec, merge_tables

    rows = 20_000
    table = pa.table({"d": pa.array([f"v{i % 100}" for i in range(rows)]),
                      "m": pa.array(range(rows), pa.int64()),
                      "t": pa.array(range(rows, 0, -1), pa.int64())})  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="sprig-spark-warm-"))
    try:
        spec = MergeSpec(time_column="t", dimensions=("d", "t"), metrics={"m": "sum"},
                         max_records_per_segment=rows // 2)  # fmt: skip
        merge_tables(spark, [table], spec, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def minion_spark():
    """This process's SparkSession on $SPRIG_SPARK_MASTER (default local[*])."""
    global _session
    with _lock:
        if _session is None:
            from spark_jobs.session import spark_session

            session = spark_session(app_name="sprig-minion")
            try:
                _warm_up(session)
            except Exception:  # a warm-up is an optimisation: the session still serves
                log.warning("warming up the minion's SparkSession failed", exc_info=True)
            _session = session
        return _session


def stop_minion_spark() -> None:
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
        _session = None
