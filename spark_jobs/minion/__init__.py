"""The minions' Spark work: one module per task type's data transform, each run on the
minion's long-lived SparkSession (``spark_jobs.minion.session``)."""
