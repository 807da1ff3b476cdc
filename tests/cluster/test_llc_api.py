"""The completion protocol's REST shapes on a controller that does not lead (no runtime in
these tests): NOT_LEADER in Pinot's JSON, bad parameters a 400 naming them, an upload for a
name that is not an LLC segment FAILED; nothing is written to ZooKeeper."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
SEGMENT = "clicks__0__3__20260801T1200Z"
BASE = {"name": SEGMENT, "instance": "Server_127.0.0.1_8098", "streamPartitionMsgOffset": "300"}


@pytest.mark.parametrize(
    "path, extra",
    [
        ("/segmentConsumed", {"reason": "rowLimit", "rowCount": "100"}),
        ("/segmentCommitStart", {"buildTimeMillis": "12"}),
        ("/segmentStoppedConsuming", {"reason": "PermanentStreamError"}),
        ("/extendBuildTime", {"extraTimeSec": "60"}),
    ],
)
def test_not_leader(api, store, path, extra):
    response = api.get(path, {**BASE, **extra})
    assert response.status_code == 200
    assert response.json() == {"status": "NOT_LEADER", "streamPartitionMsgOffset": None,
                               "buildTimeSec": -1, "isSplitCommitType": True}  # fmt: skip
    assert store.ideal_state("clicks_REALTIME") is None


def test_commit_end_not_leader(api):
    response = api.post(
        "/segmentCommitEndWithMetadata?" + "&".join(f"{k}={v}" for k, v in BASE.items())
        + "&location=/tmp/x.tmp.1"
    )  # fmt: skip
    assert response.status_code == 200
    assert response.json()["status"] == "NOT_LEADER"


def test_bad_parameters_are_named(api):
    response = api.get("/segmentConsumed", {"name": SEGMENT, "instance": "S",
                                            "streamPartitionMsgOffset": "-1"})  # fmt: skip
    assert response.status_code == 400
    assert "streamPartitionMsgOffset" in response.content.decode()
    response = api.get("/segmentConsumed", {"name": SEGMENT, "streamPartitionMsgOffset": "1"})
    assert response.status_code == 400
    assert "instance" in response.content.decode()
    response = api.get("/extendBuildTime", BASE)
    assert response.status_code == 400
    assert "extraTimeSec" in response.content.decode()


def test_upload_of_a_non_llc_name_fails(api, tmp_path):
    tar = tmp_path / "x.tar.gz"
    tar.write_bytes(b"not a segment")
    with tar.open("rb") as handle:
        response = api.post(
            "/segmentUpload?name=notLLC&instance=S&streamPartitionMsgOffset=1",
            {"segment": handle}, format="multipart",
        )  # fmt: skip
    assert response.status_code == 200
    assert response.json()["status"] == "FAILED"
