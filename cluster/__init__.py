"""The controller's cluster metadata: schemas, tables, tenants, ZooKeeper state and the REST API."""
