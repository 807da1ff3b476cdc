"""ConsumerGroupCommand's output, byte for byte, from hand-built group descriptions (no Kafka):
the states a local broker cannot produce (Stable with owners, rebalancing, Dead, Unknown) and
the column-width rules."""

import io

import pytest

from monitoring import cgc_format
from monitoring import groups as g
from monitoring.errors import GroupStateError


def render(fn, items):
    out, err = io.StringIO(), io.StringIO()
    fn(items, out, err)
    return out.getvalue(), err.getvalue()


COORD = g.Coordinator(1, "broker-1.example", 9092)
A = g.Member("consumer-1-aaaa", "consumer-1", "/10.0.0.1", None, (("orders", 1), ("orders", 0)))
B = g.Member("consumer-2-bbbb", "consumer-2", "/10.0.0.2", None, (("orders", 2),))
IDLE = g.Member("consumer-3-cccc", "consumer-3", "/10.0.0.3", None, ())
STABLE = g.GroupDescription("billing", g.STABLE, (B, IDLE, A), "range", COORD)
COMMITS = {
    ("orders", 0): g.Commit(10),
    ("orders", 1): g.Commit(7, leader_epoch=3),
    ("payments", 0): g.Commit(4),
    ("payments", 1): None,  # listed by the broker without an offset
}
ENDS = {("orders", 0): 12, ("orders", 1): 7, ("orders", 2): 30, ("payments", 0): 9}


def offsets_of(description, commits=COMMITS, ends=ENDS):
    return g.GroupOffsets(description, g.offset_rows(description, commits, ends))


def test_describe_offsets_orders_owners_first_then_unowned_commits():
    out, err = render(cgc_format.print_offsets, [offsets_of(STABLE)])
    assert err == ""
    assert out == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID\n"
        "billing         orders          0          10              12              2               consumer-1-aaaa /10.0.0.1       consumer-1\n"
        "billing         orders          1          7               7               0               consumer-1-aaaa /10.0.0.1       consumer-1\n"
        "billing         orders          2          -               30              -               consumer-2-bbbb /10.0.0.2       consumer-2\n"
        "billing         payments        0          4               9               5               -               -               -\n"
        "billing         payments        1          -               -               -               -               -               -\n"
    )  # fmt: skip


def test_columns_widen_to_the_longest_value():
    member = g.Member("consumer-with-a-long-member-id-0123456789", "c", "/192.168.100.200", None,
                      (("a-much-longer-topic-name", 0),))  # fmt: skip
    description = g.GroupDescription("group-with-a-long-name", g.STABLE, (member,), "range", COORD)
    out, _ = render(cgc_format.print_offsets, [offsets_of(description, {}, {})])
    header, row = out.splitlines()[1:]
    assert header == (
        "GROUP                  TOPIC                    PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  "
        "LAG             CONSUMER-ID                               HOST             CLIENT-ID"
    )
    assert row == (
        "group-with-a-long-name a-much-longer-topic-name 0          -               -               "
        "-               consumer-with-a-long-member-id-0123456789 /192.168.100.200 c"
    )


def test_lag_is_not_clamped_as_in_kafkas_tool_but_monitors_clamp_it():
    description = g.GroupDescription("g", g.EMPTY, coordinator=COORD)
    rows = g.offset_rows(description, {("t", 0): g.Commit(15)}, {("t", 0): 12})
    assert (rows[0].lag, rows[0].monitored_lag) == (-3, 0)


def test_empty_group_message_goes_to_stderr_and_the_table_follows():
    description = g.GroupDescription("billing", g.EMPTY, (), "", COORD)
    out, err = render(cgc_format.print_offsets, [offsets_of(description)])
    assert err == "\nConsumer group 'billing' has no active members.\n"
    assert out.splitlines()[2].startswith("billing         orders          0          10")


def test_empty_group_without_commits_prints_only_the_message():
    description = g.GroupDescription("idle", g.EMPTY, (), "", COORD)
    out, err = render(cgc_format.print_offsets, [offsets_of(description, {}, {})])
    assert (out, err) == ("", "\nConsumer group 'idle' has no active members.\n")


@pytest.mark.parametrize(
    "state", [g.PREPARING_REBALANCE, g.COMPLETING_REBALANCE, g.ASSIGNING, g.RECONCILING]
)
def test_rebalancing_group_warns_on_stderr_and_still_prints_its_table(state):
    description = g.GroupDescription("billing", state, (A,), "range", COORD)
    out, err = render(cgc_format.print_offsets, [offsets_of(description)])
    assert err == "\nWarning: Consumer group 'billing' is rebalancing.\n"
    assert "GROUP           TOPIC" in out


def test_missing_group_is_an_error_on_stdout_without_a_table():
    description = g.GroupDescription("nosuch", g.DEAD)
    assert render(cgc_format.print_offsets, [offsets_of(description, {}, {})]) == (
        "\nError: Consumer group 'nosuch' does not exist.\n",
        "",
    )
    assert render(cgc_format.print_states, [description]) == (
        "\nError: Consumer group 'nosuch' does not exist.\n",
        "",
    )


def test_a_state_without_a_rule_fails_like_the_kafka_tool():
    with pytest.raises(GroupStateError, match="found 'Unknown'"):
        render(cgc_format.print_offsets, [offsets_of(g.GroupDescription("x", g.UNKNOWN))])


def test_several_groups_print_one_block_each():
    other = g.GroupDescription("audit", g.STABLE, (B,), "range", COORD)
    out, _ = render(cgc_format.print_offsets, [offsets_of(other), offsets_of(STABLE)])
    assert out.startswith("\nGROUP ")
    blocks = out[1:].split("\n\n")
    assert len(blocks) == 2
    assert blocks[0].splitlines()[1].startswith("audit ")
    assert blocks[1].splitlines()[1].startswith("billing ")


def test_members_table_has_trailing_spaces_and_counts_partitions():
    out, err = render(cgc_format.print_members, [STABLE])
    assert err == ""
    assert out == (
        "\n"
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
        "billing         consumer-2-bbbb /10.0.0.2       consumer-2      1               \n"
        "billing         consumer-3-cccc /10.0.0.3       consumer-3      0               \n"
        "billing         consumer-1-aaaa /10.0.0.1       consumer-1      2               \n"
    )  # fmt: skip


def test_members_table_adds_group_instance_id_when_a_member_is_static():
    static = g.Member("m-1", "c-1", "/h", "instance-1", (("t", 0),))
    out, _ = render(cgc_format.print_members, [g.GroupDescription("g", g.STABLE, (static, IDLE))])
    assert out.splitlines()[1:] == [
        "GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     ",
        "g               m-1             instance-1        /h              c-1             1               ",
        "g               consumer-3-cccc                   /10.0.0.3       consumer-3      0               ",
    ]  # fmt: skip


def test_members_of_a_missing_group_print_the_error_then_the_header_as_kafka_4_does():
    out, _ = render(cgc_format.print_members, [g.GroupDescription("nosuch", g.DEAD)])
    assert out == (
        "\nError: Consumer group 'nosuch' does not exist.\n"
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
    )


def test_state_table_shows_coordinator_strategy_and_member_count():
    out, err = render(cgc_format.print_states, [STABLE])
    assert err == ""
    assert out == (
        "\n"
        "GROUP           COORDINATOR (ID)           ASSIGNMENT-STRATEGY  STATE                #MEMBERS\n"
        "billing         broker-1.example:9092  (1) range                Stable               3\n"
    )  # fmt: skip


def test_state_of_an_empty_group_without_strategy_prints_a_dash():
    description = g.GroupDescription("g", g.EMPTY, (), "", g.Coordinator(111, "127.0.0.1", 9))
    out, err = render(cgc_format.print_states, [description])
    assert err == "\nConsumer group 'g' has no active members.\n"
    assert out.splitlines()[2] == (
        "g               127.0.0.1:9  (111)        -                    Empty                0"
    )


def test_list_without_filters_is_one_id_per_line():
    out = io.StringIO()
    cgc_format.print_group_ids([g.GroupListing("a"), g.GroupListing("b")], out)
    assert out.getvalue() == "a\nb\n"


def test_list_with_state_pads_the_group_column_ten_past_the_longest_id():
    out = io.StringIO()
    listings = [g.GroupListing("short", g.STABLE), g.GroupListing("x" * 20, g.EMPTY)]
    cgc_format.print_group_states(listings, out)
    assert out.getvalue() == (
        f"{'GROUP':<30} {'STATE':<20}\n{'short':<30} {'Stable':<20}\n{'x' * 20:<30} {'Empty':<20}\n"
    )
    out = io.StringIO()
    cgc_format.print_group_states([], out)
    assert out.getvalue() == f"{'GROUP':<25} {'STATE':<20}\n"


def test_sum_totals_known_lags_and_counts_the_unknown_ones():
    idle = g.GroupDescription("idle", g.EMPTY, (), "", COORD)
    uncommitted = g.GroupDescription("new", g.STABLE, (B,), "range", COORD)
    out, err = render(
        cgc_format.print_lag_sums,
        [offsets_of(STABLE), offsets_of(idle, {}, {}), offsets_of(uncommitted, {}, ENDS)],
    )
    assert err == "\nConsumer group 'idle' has no active members.\n"
    assert out == (
        "\n"
        "GROUP           PARTITIONS      UNKNOWN-LAG     TOTAL-LAG\n"
        "billing         5               2               7\n"
        "new             1               1               -\n"
    )


def test_state_filter_is_case_insensitive_and_rejects_unknown_names():
    assert g.parse_state_filter("stable, EMPTY") == {g.STABLE, g.EMPTY}
    with pytest.raises(ValueError, match="Invalid state list 'stable,sleeping'"):
        g.parse_state_filter("stable,sleeping")


def test_verbose_offsets_add_the_leader_epoch_after_the_partition():
    out = io.StringIO()
    cgc_format.print_offsets([offsets_of(STABLE)], out, io.StringIO(), verbose=True)
    lines = out.getvalue().splitlines()
    assert lines[1].startswith(
        "GROUP           TOPIC           PARTITION  LEADER-EPOCH    CURRENT-OFFSET  LOG-END-OFFSET"
    )
    assert lines[2].startswith("billing         orders          0          -               10 ")
    assert lines[3].startswith("billing         orders          1          3               7 ")


def test_verbose_members_add_epochs_and_assignments():
    target = g.Member("m-1", "c-1", "/h", None, (("b", 1), ("a", 2), ("a", 0)), (("a", 0),))
    out = io.StringIO()
    description = g.GroupDescription("g", g.RECONCILING, (target, IDLE))
    cgc_format.print_members([description], out, io.StringIO(), verbose=True)
    assert out.getvalue().splitlines()[1:] == [
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     "
        "CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   ",
        "g               m-1             /h              c-1             3               "
        "-               a:0,2;b:1            -               a:0                 ",
        "g               consumer-3-cccc /10.0.0.3       consumer-3      0               "
        "-               -                    -               -                   ",
    ]
    assert cgc_format.assignment_text([]) == "-"


def test_verbose_state_adds_the_epoch_columns_before_the_member_count():
    out = io.StringIO()
    cgc_format.print_states([STABLE], out, io.StringIO(), verbose=True)
    header, row = out.getvalue().splitlines()[1:]
    assert header.split()[-4:] == ["STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]
    assert row.endswith("Stable               -               -                         3")
