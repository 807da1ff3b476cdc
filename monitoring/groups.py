"""Consumer groups as Kafka's admin API describes them, and ConsumerGroupCommand's rules for
turning a description, its commits and the end offsets into partition rows."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from monitoring.lag import monitored_lag, offset_lag

# Kafka's group states, spelled as ConsumerGroupCommand prints them (GroupState.toString).
UNKNOWN = "Unknown"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"

# The states a consumer group can be listed by (GroupState.groupStatesForType(CONSUMER)).
CONSUMER_GROUP_STATES = (
    PREPARING_REBALANCE,
    COMPLETING_REBALANCE,
    STABLE,
    DEAD,
    EMPTY,
    ASSIGNING,
    RECONCILING,
)
REBALANCING_STATES = frozenset({PREPARING_REBALANCE, COMPLETING_REBALANCE, ASSIGNING, RECONCILING})

TopicPartition = tuple[str, int]


def parse_state(name: str) -> str:
    """Kafka's case-insensitive state lookup; an unknown name is UNKNOWN."""
    for state in (UNKNOWN, *CONSUMER_GROUP_STATES):
        if state.lower() == name.strip().lower():
            return state
    return UNKNOWN


def parse_state_filter(text: str) -> frozenset[str]:
    """`stable,empty` -> {Stable, Empty}. Raises ValueError naming the valid states."""
    states = {parse_state(part) for part in text.split(",")}
    if not states <= set(CONSUMER_GROUP_STATES):
        raise ValueError(
            f"Invalid state list '{text}'. Valid states are: {', '.join(CONSUMER_GROUP_STATES)}"
        )
    return frozenset(states)


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    state: str = UNKNOWN


@dataclass(frozen=True)
class Coordinator:
    id: int
    host: str
    port: int

    def label(self) -> str:
        """`host:port  (id)`, two spaces, as ConsumerGroupCommand prints it."""
        return f"{self.host}:{self.port}  ({self.id})"


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str = ""
    host: str = ""
    group_instance_id: str | None = None
    assignment: tuple[TopicPartition, ...] = ()
    target_assignment: tuple[TopicPartition, ...] = ()  # KIP-848 groups only


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    members: tuple[Member, ...] = ()
    assignor: str = ""
    coordinator: Coordinator | None = None


@dataclass(frozen=True)
class Commit:
    """A committed offset: the next offset the group will read."""

    offset: int
    leader_epoch: int | None = None
    metadata: str | None = None


@dataclass(frozen=True)
class PartitionRow:
    """One row of `--describe --offsets`. None means unknown (printed `-`)."""

    group: str
    topic: str
    partition: int
    committed: int | None
    end_offset: int | None
    leader_epoch: int | None = None
    consumer_id: str | None = None
    host: str | None = None
    client_id: str | None = None

    @property
    def lag(self) -> int | None:
        """As Kafka's tool prints it (may be negative when the commit was read last)."""
        return offset_lag(self.committed, self.end_offset)

    @property
    def monitored_lag(self) -> int | None:
        """Clamped at 0, as lag monitors report it."""
        return monitored_lag(self.committed, self.end_offset)


@dataclass(frozen=True)
class GroupOffsets:
    """A group's description with its partition rows, in ConsumerGroupCommand's order."""

    description: GroupDescription
    rows: tuple[PartitionRow, ...] = field(default=())


def offset_rows(
    description: GroupDescription,
    commits: Mapping[TopicPartition, Commit],
    end_offsets: Mapping[TopicPartition, int | None],
) -> tuple[PartitionRow, ...]:
    """Rows as ConsumerGroupCommand orders them: members that own partitions, the member with
    most partitions first, each member's partitions by topic and partition; then the committed
    partitions no member owns, with consumer, host and client `-`. Members without partitions
    get no row."""
    group = description.group_id
    rows: list[PartitionRow] = []
    owned: set[TopicPartition] = set()
    members = [m for m in description.members if m.assignment]
    # sorted() is stable, so members with equal counts keep the broker's order, as in Kafka.
    for member in sorted(members, key=lambda m: -len(m.assignment)):
        owned.update(member.assignment)
        rows.extend(
            _row(group, tp, commits, end_offsets, member.member_id, member.host, member.client_id)
            for tp in sorted(set(member.assignment))
        )
    unowned = sorted(tp for tp in commits if tp not in owned)
    rows.extend(_row(group, tp, commits, end_offsets, None, None, None) for tp in unowned)
    return tuple(rows)


def _row(group, tp, commits, end_offsets, consumer_id, host, client_id) -> PartitionRow:
    commit = commits.get(tp)
    return PartitionRow(
        group=group,
        topic=tp[0],
        partition=tp[1],
        committed=commit.offset if commit else None,
        end_offset=end_offsets.get(tp),
        leader_epoch=commit.leader_epoch if commit else None,
        consumer_id=consumer_id,
        host=host,
        client_id=client_id,
    )


def partitions_of(description: GroupDescription, commits: Iterable[TopicPartition]) -> set:
    """Every partition a group owns or has committed: the ones whose end offsets are needed."""
    wanted = set(commits)
    for member in description.members:
        wanted.update(member.assignment)
    return wanted
