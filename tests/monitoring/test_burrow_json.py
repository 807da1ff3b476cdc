"""Burrow's ConsumerGroupStatus JSON from evaluated partitions: /status lists the partitions
that are not OK, /lag all; maxlag, totallag and partition_count cover all either way."""

from monitoring import groups as g
from monitoring.evaluation.burrow import Commit, PartitionStatus, Status, group_status
from monitoring.logic.burrow_status import status_json

START = Commit(1000, 100_000, 0, 100_500)
END = Commit(5000, 500_000, 200, None)


def test_status_and_lag_bodies():
    ok = PartitionStatus("orders", 0, Status.OK, 1.0, 0, START, START)
    stopped = PartitionStatus("orders", 1, Status.STOP, 0.5, 200, START, END)
    status = group_status("billing", [ok, stopped])
    rows = {("orders", 1): g.PartitionRow("billing", "orders", 1, 5000, 5200, None,
                                          "consumer-1", "/10.0.0.7", "client-a")}  # fmt: skip
    body = status_json("local", status, rows, show_all=False)
    stopped_json = {
        "topic": "orders", "partition": 1, "owner": "/10.0.0.7", "client_id": "client-a",
        "status": "STOP",
        "start": {"offset": 1000, "timestamp": 100_000, "observedAt": 100_500, "lag": 0},
        "end": {"offset": 5000, "timestamp": 500_000, "observedAt": 500_000, "lag": 200},
        "current_lag": 200, "complete": 0.5,
    }  # fmt: skip
    assert body == {
        "cluster": "local", "group": "billing", "status": "ERR", "complete": 0.5,
        "partitions": [stopped_json], "partition_count": 2, "maxlag": stopped_json,
        "totallag": 200,
    }  # fmt: skip
    lag = status_json("local", status, rows, show_all=True)
    assert [p["partition"] for p in lag["partitions"]] == [0, 1]
    assert lag["partitions"][0]["owner"] == "" and lag["partitions"][0]["client_id"] == ""


def test_an_unknown_group_is_notfound():
    body = status_json("local", group_status("nobody", None), {}, show_all=True)
    assert body == {"cluster": "local", "group": "nobody", "status": "NOTFOUND", "complete": 0.0,
                    "partitions": [], "partition_count": 0, "maxlag": None, "totallag": 0}  # fmt: skip
