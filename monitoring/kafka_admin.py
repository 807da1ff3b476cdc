"""Reads consumer groups, their commits and the partitions' end offsets through
confluent-kafka's AdminClient, the same admin calls kafka-consumer-groups.sh makes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import Future

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from monitoring import groups as g
from monitoring.errors import KafkaUnavailableError

_STATES = {
    ConsumerGroupState.UNKNOWN: g.UNKNOWN,
    ConsumerGroupState.PREPARING_REBALANCING: g.PREPARING_REBALANCE,
    ConsumerGroupState.COMPLETING_REBALANCING: g.COMPLETING_REBALANCE,
    ConsumerGroupState.STABLE: g.STABLE,
    ConsumerGroupState.DEAD: g.DEAD,
    ConsumerGroupState.EMPTY: g.EMPTY,
}

_TRANSPORT_ERRORS = (KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN)


class KafkaGroupReader:
    """One AdminClient for one cluster. `timeout_s` bounds each admin call (kafka-consumer-groups'
    `--timeout`, 5 s by default). `config` adds client properties (security, for example)."""

    def __init__(
        self, bootstrap_servers: str, timeout_s: float = 5.0, config: Mapping | None = None
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout_s = timeout_s
        self._admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap_servers})

    # -- groups -------------------------------------------------------------------------------
    def list_groups(self) -> list[g.GroupListing]:
        """Every consumer group the cluster knows, in the broker's order."""
        future = self._admin.list_consumer_groups(request_timeout=self.timeout_s)
        result = self._wait(future, "list the consumer groups")
        if result.errors:
            # librdkafka reports an unreachable cluster here rather than raising.
            error = KafkaException(result.errors[0])
            raise self._unavailable("list the consumer groups", error) from error
        return [
            g.GroupListing(listing.group_id, _STATES.get(listing.state, g.UNKNOWN))
            for listing in result.valid
        ]

    def describe(self, group_ids: Iterable[str]) -> dict[str, g.GroupDescription]:
        """Descriptions by group id. A group the broker reports as not found is Dead."""
        group_ids = list(group_ids)
        if not group_ids:
            return {}
        futures = self._admin.describe_consumer_groups(group_ids, request_timeout=self.timeout_s)
        described = {}
        for group_id, future in futures.items():
            try:
                found = self._wait(future, f"describe the consumer group '{group_id}'")
            except KafkaUnavailableError as exc:
                if _error_code(exc.__cause__) != KafkaError.GROUP_ID_NOT_FOUND:
                    raise
                described[group_id] = g.GroupDescription(group_id, g.DEAD)
                continue
            described[group_id] = _description(found)
        return described

    def commits(self, group_id: str) -> dict[g.TopicPartition, g.Commit | None]:
        """The group's committed offsets for every partition it has committed. None marks a
        partition the broker listed with no offset."""
        return self.commits_of([group_id])[group_id]

    def commits_of(self, group_ids: Iterable[str]) -> dict[str, dict]:
        """`commits` for many groups: the client takes one group per request, so every request
        is sent before any answer is awaited."""
        futures = {}
        for group_id in dict.fromkeys(group_ids):
            request = [ConsumerGroupTopicPartitions(group_id)]
            futures.update(
                self._admin.list_consumer_group_offsets(request, request_timeout=self.timeout_s)
            )
        found = {}
        for group_id, future in futures.items():
            result = self._wait(future, f"read the offsets of group '{group_id}'")
            commits: dict[g.TopicPartition, g.Commit | None] = {}
            for tp in result.topic_partitions or ():
                if tp.error is not None:
                    continue
                # confluent-kafka maps every negative offset (no commit) to OFFSET_INVALID.
                commits[(tp.topic, tp.partition)] = (
                    g.Commit(tp.offset, tp.leader_epoch, tp.metadata) if tp.offset >= 0 else None
                )
            found[group_id] = commits
        return found

    def end_offsets(
        self, partitions: Iterable[g.TopicPartition]
    ) -> dict[g.TopicPartition, int | None]:
        """High watermarks (ListOffsets latest, read-uncommitted, as the Kafka tool reads them).
        Partitions that have no leader, or whose lookup fails, map to None (unknown)."""
        partitions = sorted(set(partitions))
        ends: dict[g.TopicPartition, int | None] = dict.fromkeys(partitions)
        with_leader = self._with_leader(partitions)
        if not with_leader:
            return ends
        request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in with_leader}
        futures = self._admin.list_offsets(request, request_timeout=self.timeout_s)
        for tp, future in futures.items():
            try:
                offset = self._wait(future, "list the end offsets").offset
                # confluent-kafka answers OFFSET_INVALID, not an error, when the leader did
                # not answer in time: unknown, like any end offset Kafka did not give
                ends[(tp.topic, tp.partition)] = offset if offset >= 0 else None
            except KafkaUnavailableError as exc:
                # A partition-level error (leader moving, topic deleted) leaves that end offset
                # unknown, as in the Kafka tool; losing the cluster fails the whole call.
                if _error_code(exc.__cause__) in (None, *_TRANSPORT_ERRORS):
                    raise
        return ends

    def group_offsets(self, group_ids: Iterable[str]) -> list[g.GroupOffsets]:
        """Descriptions with their partition rows, sorted by group id as the Kafka tool prints
        them. A Dead group has no rows."""
        descriptions = self.describe(group_ids)
        commits = self.commits_of(k for k, d in descriptions.items() if d.state != g.DEAD)
        commits.update({k: {} for k, d in descriptions.items() if d.state == g.DEAD})
        wanted: set[g.TopicPartition] = set()
        for group_id, description in descriptions.items():
            wanted |= g.partitions_of(description, commits[group_id])
        ends = self.end_offsets(wanted)  # one ListOffsets round for every group
        return [
            g.GroupOffsets(d, g.offset_rows(d, commits[group_id], ends))
            for group_id, d in sorted(descriptions.items())
        ]

    # -- helpers ------------------------------------------------------------------------------
    def _with_leader(self, partitions: list[g.TopicPartition]) -> list[g.TopicPartition]:
        try:
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise self._unavailable("read the topic metadata", exc) from exc
        led = []
        for topic, partition in partitions:
            meta = metadata.topics.get(topic)
            if meta is None or meta.error is not None:
                continue
            pmeta = meta.partitions.get(partition)
            if pmeta is not None and pmeta.leader >= 0:
                led.append((topic, partition))
        return led

    def _wait(self, future: Future, what: str):
        try:
            return future.result(timeout=self.timeout_s + 1)
        except KafkaException as exc:
            raise self._unavailable(what, exc) from exc
        except TimeoutError as exc:
            raise self._unavailable(what, exc) from exc

    def _unavailable(self, what: str, exc: BaseException) -> KafkaUnavailableError:
        detail = exc.args[0].str() if _error_code(exc) is not None else str(exc) or "timed out"
        return KafkaUnavailableError(
            f"could not {what} from Kafka at {self.bootstrap_servers} "
            f"(timeout {int(self.timeout_s * 1000)} ms): {detail}"
        )


def _error_code(exc: BaseException | None) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0].code()
    return None


def _description(found) -> g.GroupDescription:
    coordinator = found.coordinator
    return g.GroupDescription(
        group_id=found.group_id,
        state=_STATES.get(found.state, g.UNKNOWN),
        members=tuple(
            g.Member(
                member_id=m.member_id,
                client_id=m.client_id or "",
                host=m.host or "",
                group_instance_id=m.group_instance_id or None,
                assignment=_partitions(m.assignment),
                target_assignment=_partitions(getattr(m, "target_assignment", None)),
            )
            for m in found.members or ()
        ),
        assignor=found.partition_assignor or "",
        coordinator=g.Coordinator(coordinator.id, coordinator.host, coordinator.port)
        if coordinator
        else None,
    )


def _partitions(assignment) -> tuple[g.TopicPartition, ...]:
    if assignment is None:
        return ()
    return tuple((tp.topic, tp.partition) for tp in (assignment.topic_partitions or ()))
