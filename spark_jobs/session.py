"""The one way a Sprig process gets a SparkSession."""

from __future__ import annotations

import logging
import os
import sys


def spark_session(master: str | None = None, app_name: str = "sprig", **conf: str):
    """A SparkSession on `master` (default: $SPRIG_SPARK_MASTER or local[*]).

    Spark takes about 10 s to start a JVM, so callers keep and reuse the session.

    SQL cannot name files as tables (``text.`/etc/passwd```: ``spark.sql.runSQLOnFiles``) and
    ``${env:…}``/``${system:…}`` in SQL text stay text (``spark.sql.variable.substitute``): task
    configs bring SQL expressions (PurgeTask), and neither may reach the host's files or
    environment, whatever the checks before Spark let through.
    """
    from pyspark.sql import SparkSession

    # Spark starts its Python workers with `python3` from PATH unless told otherwise, and that
    # interpreter may lack pyarrow and the engine; use the one running this process.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master or os.environ.get("SPRIG_SPARK_MASTER", "local[*]"))
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", os.environ.get("SPRIG_SPARK_DRIVER_MEMORY", "2g"))
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.runSQLOnFiles", "false")
        .config("spark.sql.variable.substitute", "false")
    )
    # py4j logs at INFO when its connections close at interpreter exit, after logging is gone
    logging.getLogger("py4j").setLevel(logging.WARNING)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
