"""Enable or disable a table (``PUT /tables/{t}/state``): the ideal state's HELIX_ENABLED,
which servers follow by taking the table's segments OFFLINE or ONLINE."""

from __future__ import annotations

from cluster.logic import audit
from cluster.logic.table_views import existing_types
from controller.errors import BadRequest
from engine.clusterstate import (
    ClusterStore,
    ResourceAssignment,
    split_table_name,
    table_name_with_type,
)


def table_state(store: ClusterStore, table: str, table_type: str | None) -> dict:
    raw = split_table_name(table)[0]
    kinds = existing_types(table, table_type)
    states = {}
    for kind in kinds:
        ideal = store.ideal_state(table_name_with_type(raw, kind))
        states[kind] = "enabled" if ideal is None or ideal.enabled else "disabled"
    if len(states) == 1:
        return {"state": next(iter(states.values()))}
    return {"state": states}


def set_table_state(store: ClusterStore, table: str, table_type: str | None, state: str) -> dict:
    wanted = (state or "").lower()
    if wanted not in ("enable", "disable"):
        raise BadRequest(f"state must be enable or disable, got '{state}'")
    raw = split_table_name(table)[0]
    done = []
    for kind in existing_types(table, table_type):
        resource = table_name_with_type(raw, kind)

        def change(ideal: ResourceAssignment) -> ResourceAssignment:
            ideal.enabled = wanted == "enable"
            return ideal

        store.update_ideal_state(resource, change)
        audit.record(f"table.{wanted}", "table", resource)
        done.append(resource)
    return {"status": f"Request to {wanted} table {', '.join(done)} is successful"}
