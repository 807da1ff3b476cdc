"""Where each piece of cluster state lives in ZooKeeper (see the package docstring)."""

from __future__ import annotations

import dataclasses

BROKER_RESOURCE = "brokerResource"


@dataclasses.dataclass(frozen=True)
class ClusterPaths:
    """Path builders for one cluster, rooted at ``/<cluster_name>``."""

    cluster_name: str

    @property
    def root(self) -> str:
        return f"/{self.cluster_name}"

    # --- configs ---------------------------------------------------------------------------
    @property
    def cluster_config(self) -> str:
        return f"{self.root}/CONFIGS/CLUSTER/{self.cluster_name}"

    @property
    def participants(self) -> str:
        return f"{self.root}/CONFIGS/PARTICIPANT"

    def instance_config(self, instance_id: str) -> str:
        return f"{self.participants}/{instance_id}"

    # --- liveness and per-instance state ---------------------------------------------------
    @property
    def live_instances(self) -> str:
        return f"{self.root}/LIVEINSTANCES"

    def live_instance(self, instance_id: str) -> str:
        return f"{self.live_instances}/{instance_id}"

    @property
    def instances(self) -> str:
        return f"{self.root}/INSTANCES"

    def instance(self, instance_id: str) -> str:
        return f"{self.instances}/{instance_id}"

    def current_states(self, instance_id: str, session_id: str | None = None) -> str:
        base = f"{self.instance(instance_id)}/CURRENTSTATES"
        return base if session_id is None else f"{base}/{session_id}"

    def current_state(self, instance_id: str, session_id: str, resource: str) -> str:
        return f"{self.current_states(instance_id, session_id)}/{resource}"

    def messages(self, instance_id: str) -> str:
        return f"{self.instance(instance_id)}/MESSAGES"

    def message(self, instance_id: str, message_id: str) -> str:
        return f"{self.messages(instance_id)}/{message_id}"

    # --- resources -------------------------------------------------------------------------
    @property
    def ideal_states(self) -> str:
        return f"{self.root}/IDEALSTATES"

    def ideal_state(self, resource: str) -> str:
        return f"{self.ideal_states}/{resource}"

    @property
    def external_views(self) -> str:
        return f"{self.root}/EXTERNALVIEW"

    def external_view(self, resource: str) -> str:
        return f"{self.external_views}/{resource}"

    # --- controller ------------------------------------------------------------------------
    @property
    def controller_leader(self) -> str:
        return f"{self.root}/CONTROLLER/LEADER"

    # --- property store --------------------------------------------------------------------
    @property
    def property_store(self) -> str:
        return f"{self.root}/PROPERTYSTORE"

    @property
    def schemas(self) -> str:
        return f"{self.property_store}/SCHEMAS"

    def schema(self, schema_name: str) -> str:
        return f"{self.schemas}/{schema_name}"

    @property
    def table_configs(self) -> str:
        return f"{self.property_store}/CONFIGS/TABLE"

    def table_config(self, table_with_type: str) -> str:
        return f"{self.table_configs}/{table_with_type}"

    @property
    def application_quotas(self) -> str:
        """Pinot's application query quotas: simpleFields application -> queries per second."""
        return f"{self.property_store}/CONFIGS/CLUSTER/applicationQuotas"

    @property
    def segments(self) -> str:
        return f"{self.property_store}/SEGMENTS"

    def table_segments(self, table_with_type: str) -> str:
        return f"{self.segments}/{table_with_type}"

    def segment(self, table_with_type: str, segment_name: str) -> str:
        return f"{self.table_segments(table_with_type)}/{segment_name}"

    def controller_jobs(self, job_type: str) -> str:
        return f"{self.property_store}/CONTROLLER_JOBS/{job_type}"

    def controller_job(self, job_type: str, job_id: str) -> str:
        return f"{self.controller_jobs(job_type)}/{job_id}"

    @property
    def segment_lineages(self) -> str:
        return f"{self.property_store}/SEGMENT_LINEAGE"

    def segment_lineage(self, table_with_type: str) -> str:
        return f"{self.segment_lineages}/{table_with_type}"

    @property
    def table_status(self) -> str:
        return f"{self.property_store}/CONTROLLER_METRICS"

    def table_status_of(self, table_with_type: str) -> str:
        return f"{self.table_status}/{table_with_type}"

    def skeleton(self) -> list[str]:
        """The persistent znodes every cluster has, parents first."""
        return [
            self.root,
            f"{self.root}/CONFIGS/CLUSTER",
            self.participants,
            f"{self.root}/CONFIGS/RESOURCE",
            self.live_instances,
            self.instances,
            self.ideal_states,
            self.external_views,
            f"{self.root}/CONTROLLER",
            self.controller_leader,
            self.schemas,
            self.table_configs,
            self.segments,
            f"{self.property_store}/CONTROLLER_JOBS",
            self.table_status,
        ]
