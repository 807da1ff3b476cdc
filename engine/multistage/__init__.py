"""The multi-stage query engine (Pinot's MSE, "v2"): joins, subqueries, window functions
and set operations, distributed over the servers.

SQL -> ``sql`` (parse) -> ``planner`` (logical plan over field ids) -> ``optimize`` (filter
pushdown into joins and leaves, column pruning) -> ``typing`` (every field's Arrow type, by
DataFusion) -> ``stages`` (exchanges) -> ``fragment`` (stages with workers). The broker
dispatches (``coordinator``); servers host a ``runner`` whose ``worker``s read their leaf
with the single-stage engine (``leaf``), run their operators with DataFusion (``render``
makes each stage one SQL statement) and move Arrow record batches through ``mailbox``es.
"""
