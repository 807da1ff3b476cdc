"""Controller logic as plain functions, one verb per module, shared by the REST views, the
periodic tasks and management commands. Each takes a ClusterStore and plain values."""
