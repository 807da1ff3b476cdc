"""External view aggregation: what the live instances report, per resource."""

from __future__ import annotations

from engine.clusterstate.records import CurrentState, ResourceAssignment, SegmentState


def compute_external_view(
    resource: str, live_current_states: dict[str, dict[str, CurrentState]]
) -> ResourceAssignment:
    """The external view of ``resource``: segment -> instance -> state, from the current
    states of live instances (instance -> resource -> CurrentState). Dead instances and
    DROPPED replicas do not appear, as in Helix."""
    view = ResourceAssignment(resource)
    for instance_id, by_resource in sorted(live_current_states.items()):
        current = by_resource.get(resource)
        if current is None:
            continue
        for segment, state in current.segments.items():
            if state == SegmentState.DROPPED:
                continue
            view.segments.setdefault(segment, {})[instance_id] = state
    return view
