"""kafka-consumer-groups.sh's text output (ConsumerGroupCommand, Kafka 4.x), byte for byte:
the same headers and column order, left-aligned columns of the same widths, `-` for unknown
values, and the same messages, on the same stream, for empty, rebalancing and missing groups.

Each table starts with an empty line, as the Kafka tool's `"\\n%-15s ..."` formats make it do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from monitoring import groups as g
from monitoring.errors import GroupStateError
from monitoring.lag import total_lag

MISSING = "-"


def _text(value) -> str:
    return MISSING if value is None else str(value)


def _line(widths: Sequence[int], values: Sequence) -> str:
    """Each value left-aligned in its width, one space between; width 0 = unpadded."""
    return " ".join(f"{v:<{w}}" if w else str(v) for w, v in zip(widths, values, strict=True))


def not_found_error(descriptions: Sequence[g.GroupDescription]) -> str | None:
    """Kafka 4's tool fails the whole command on the first group that does not exist (Dead),
    with the Java exception's text (a Kafka 4 broker answers GROUP_ID_NOT_FOUND; the tool's
    "does not exist" message below is for older brokers). That line, or None."""
    for d in descriptions:
        if d.state == g.DEAD:
            return (
                "\nError: Executing consumer group command failed due to org.apache.kafka."
                f"common.errors.GroupIdNotFoundException: Group {d.group_id} not found.\n"
            )
    return None


def print_group_ids(listings: Sequence[g.GroupListing], out: TextIO) -> None:
    """`--list` without filters: one group id per line, no header."""
    for listing in listings:
        out.write(f"{listing.group_id}\n")


def print_group_states(listings: Sequence[g.GroupListing], out: TextIO) -> None:
    """`--list --state`: a GROUP/STATE table; the group column is 10 wider than the longest id
    (at least 15)."""
    group_width = max((max(15, len(x.group_id)) for x in listings), default=15) + 10
    widths = (group_width, 20)
    out.write(_line(widths, ("GROUP", "STATE")) + "\n")
    for listing in listings:
        out.write(_line(widths, (listing.group_id, listing.state)) + "\n")


def should_print_table(group: str, state: str, num_rows: int, out: TextIO, err: TextIO) -> bool:
    """Kafka's per-group message (blank line first): Dead -> an error on stdout; Empty -> "no
    active members" on stderr; rebalancing -> a warning on stderr. True when a table follows.
    A state without a rule (Unknown) fails as the Kafka tool does."""
    if state == g.DEAD:
        out.write(f"\nError: Consumer group '{group}' does not exist.\n")
    elif state == g.EMPTY:
        err.write(f"\nConsumer group '{group}' has no active members.\n")
    elif state in g.REBALANCING_STATES:
        err.write(f"\nWarning: Consumer group '{group}' is rebalancing.\n")
    elif state != g.STABLE:
        raise GroupStateError(f"Expected a valid consumer group state, but found '{state}'.")
    return state != g.DEAD and num_rows > 0


def print_offsets(
    groups: Sequence[g.GroupOffsets], out: TextIO, err: TextIO, verbose: bool = False
) -> None:
    """`--describe [--offsets]`: GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG
    CONSUMER-ID HOST CLIENT-ID, per group; `verbose` adds LEADER-EPOCH after PARTITION."""
    for entry in groups:
        description, rows = entry.description, entry.rows
        if not should_print_table(description.group_id, description.state, len(rows), out, err):
            continue
        widths = [
            max(15, *(len(r.group) for r in rows)),
            max(15, *(len(_text(r.topic)) for r in rows)),
            10,
            15,
            15,
            15,
            max(15, *(len(_text(r.consumer_id)) for r in rows)),
            max(15, *(len(_text(r.host)) for r in rows)),
            0,
        ]
        header = list(_OFFSET_HEADER)
        if verbose:
            widths.insert(3, 15)
            header.insert(3, "LEADER-EPOCH")
        out.write("\n" + _line(widths, header))
        for r in rows:
            values = [r.group, r.topic, r.partition, r.committed, r.end_offset, r.lag]
            values += [r.consumer_id, r.host, r.client_id]
            if verbose:
                values.insert(3, r.leader_epoch)
            out.write("\n" + _line(widths, [_text(v) for v in values]))
        out.write("\n")


_OFFSET_HEADER = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)


def print_lag_sums(groups: Sequence[g.GroupOffsets], out: TextIO, err: TextIO) -> None:
    """`--describe --sum` (ours; the Kafka tool lacks it): one row per group with the number of
    partitions, how many of them have an unknown lag, and the total of the known lags (`-` when
    none is known). The group messages are the Kafka tool's."""
    printable = [
        entry
        for entry in groups
        if should_print_table(
            entry.description.group_id, entry.description.state, len(entry.rows), out, err
        )
    ]
    if not printable:
        return
    widths = (max(15, *(len(e.description.group_id) for e in printable)), 15, 15, 0)
    out.write("\n" + _line(widths, ("GROUP", "PARTITIONS", "UNKNOWN-LAG", "TOTAL-LAG")))
    for entry in printable:
        lags = [row.lag for row in entry.rows]
        unknown = sum(1 for lag in lags if lag is None)
        values = (entry.description.group_id, len(lags), unknown, _text(total_lag(lags)))
        out.write("\n" + _line(widths, values))
    out.write("\n")


def assignment_text(assignment: Sequence[g.TopicPartition]) -> str:
    """`topic1:0,1;topic2:3`: topics sorted, partitions sorted; `-` when empty."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assignment:
        by_topic.setdefault(topic, []).append(partition)
    parts = sorted(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in by_topic.items())
    return ";".join(parts) or MISSING


def print_members(
    descriptions: Sequence[g.GroupDescription], out: TextIO, err: TextIO, verbose: bool = False
) -> None:
    """`--describe --members`: GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS;
    `verbose` adds CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT (the epochs
    print `-`: the admin client does not return them). Kafka 4.x prints the header even after
    the "does not exist" error, and ends the base columns with a space (its format ends in
    `%-15s `); both are kept so scripts see the same bytes."""
    for d in descriptions:
        members = d.members
        group_w = consumer_w = host_w = client_w = 15
        instance_w = 17
        current_w = target_w = 20
        with_instance = False
        if should_print_table(d.group_id, d.state, len(members), out, err):
            for m in members:
                group_w = max(group_w, len(d.group_id))
                consumer_w = max(consumer_w, len(m.member_id))
                instance_w = max(instance_w, len(m.group_instance_id or ""))
                host_w = max(host_w, len(m.host))
                client_w = max(client_w, len(m.client_id))
                with_instance = with_instance or bool(m.group_instance_id)
                current_w = max(current_w, len(assignment_text(m.assignment)))
                target_w = max(target_w, len(assignment_text(m.target_assignment)))
        if with_instance:
            widths = (group_w, consumer_w, instance_w, host_w, client_w, 15)
            header = ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID")
        else:
            widths = (group_w, consumer_w, host_w, client_w, 15)
            header = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID")
        extra_widths = (15, current_w, 15, target_w)
        extra = ""
        if verbose:
            extra = _line(extra_widths, _MEMBER_VERBOSE_HEADER)
        out.write("\n" + _line(widths, (*header, "#PARTITIONS")) + " " + extra + "\n")
        for m in members:
            values = [d.group_id, m.member_id]
            if with_instance:
                values.append(m.group_instance_id or "")
            values += [m.host, m.client_id, len(m.assignment)]
            if verbose:
                extra = _line(
                    extra_widths,
                    (MISSING, assignment_text(m.assignment), MISSING,
                     assignment_text(m.target_assignment)),
                )  # fmt: skip
            out.write(_line(widths, values) + " " + extra + "\n")


_MEMBER_VERBOSE_HEADER = (
    "CURRENT-EPOCH",
    "CURRENT-ASSIGNMENT",
    "TARGET-EPOCH",
    "TARGET-ASSIGNMENT",
)


def print_states(
    descriptions: Sequence[g.GroupDescription], out: TextIO, err: TextIO, verbose: bool = False
) -> None:
    """`--describe --state`: GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS;
    `verbose` adds GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH (`-`: not given by the admin
    client) before #MEMBERS."""
    for d in descriptions:
        if not should_print_table(d.group_id, d.state, 1, out, err):
            continue
        coordinator = d.coordinator.label() if d.coordinator else MISSING
        widths = [max(15, len(d.group_id)), max(25, len(coordinator)), 20, 20, 0]
        header = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        values = [d.group_id, coordinator, d.assignor or MISSING, d.state, len(d.members)]
        if verbose:
            widths[4:4] = [15, 25]
            header[4:4] = ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
            values[4:4] = [MISSING, MISSING]
        out.write("\n" + _line(widths, header) + "\n" + _line(widths, values) + "\n")
