"""kafka-lag-exporter's series from polls: names, labels, unknown lag left out (never 0 or NaN),
time lag interpolated over successive polls."""

from monitoring import groups as g
from monitoring.exporter import LagExporter

MEMBER = g.Member("consumer-1", "client-a", "/10.0.0.7", assignment=(("orders", 0), ("orders", 1)))


def poll(committed: dict[int, int | None], ends: dict[int, int]) -> list[g.GroupOffsets]:
    description = g.GroupDescription("billing", g.STABLE, (MEMBER,))
    commits = {("orders", p): g.Commit(o) for p, o in committed.items() if o is not None}
    commits[("orders", 2)] = g.Commit(5)  # no member owns partition 2
    end_offsets = {("orders", p): e for p, e in ends.items()}
    return [g.GroupOffsets(description, g.offset_rows(description, commits, end_offsets))]


def series(lines: list[str], name: str) -> dict[str, str]:
    return {
        line.split("{", 1)[1].rsplit("}", 1)[0]: line.rsplit(" ", 1)[1]
        for line in lines
        if line.startswith(name + "{")
    }


def test_series_names_labels_and_values():
    exporter = LagExporter("prod")
    assert exporter.lines() == []  # nothing before the first poll
    exporter.observe(poll({0: 100, 1: None}, {0: 100, 1: 50, 2: 20}), 1_000, 12.5)
    exporter.observe(poll({0: 100, 1: None}, {0: 200, 1: 50, 2: 40}), 11_000, 3.0)
    lines = exporter.lines()
    owned = ('cluster_name="prod",group="billing",topic="orders",partition="0",'
             'member_host="/10.0.0.7",consumer_id="consumer-1",client_id="client-a"')  # fmt: skip
    unowned = ('cluster_name="prod",group="billing",topic="orders",partition="2",'
               'member_host="unknown",consumer_id="unknown",client_id="unknown"')  # fmt: skip
    assert series(lines, "kafka_consumergroup_group_offset") == {owned: "100", unowned: "5"}
    assert series(lines, "kafka_consumergroup_group_lag") == {owned: "100", unowned: "35"}
    # offset 100 was the end at 1 s; polled at 11 s -> 10 s behind. Partition 2: end 20 at 1 s,
    # 40 at 11 s, so offset 5 extrapolates to -6.5 s -> 17.5 s behind.
    assert series(lines, "kafka_consumergroup_group_lag_seconds") == {owned: "10.0",
                                                                      unowned: "17.5"}  # fmt: skip
    assert series(lines, "kafka_partition_latest_offset") == {
        'cluster_name="prod",topic="orders",partition="0"': "200",
        'cluster_name="prod",topic="orders",partition="1"': "50",
        'cluster_name="prod",topic="orders",partition="2"': "40",
    }
    # partition 1 has no commit: no offset, lag or time-lag series at all
    assert not any('partition="1"' in line and "group" in line for line in lines)
    assert not any("NaN" in line or "Inf" in line for line in lines)
    assert 'kafka_consumergroup_poll_time_ms{cluster_name="prod"} 3.0' in lines
    assert "# TYPE kafka_consumergroup_group_lag gauge" in lines


def test_time_lag_waits_for_two_points_and_labels_are_escaped():
    exporter = LagExporter('we"ird\\')
    exporter.observe(poll({0: 10, 1: 50}, {0: 100, 1: 50, 2: 20}), 1_000, 1.0)
    lines = exporter.lines()
    seconds = series(lines, "kafka_consumergroup_group_lag_seconds")
    # one point: partition 0 unknown (left out); partition 1 caught up: 0
    assert list(seconds.values()) == ["0.0"]
    assert 'cluster_name="we\\"ird\\\\"' in next(iter(seconds))
