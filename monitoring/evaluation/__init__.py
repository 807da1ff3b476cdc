"""Evaluating consumer lag over time: Burrow's partition and group status (`burrow`), the
commit windows it reads built from lag samples (`window`), time lag in seconds as
kafka-lag-exporter estimates it (`time_lag`), and alert rules (`alerts`)."""
