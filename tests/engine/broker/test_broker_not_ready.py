"""A broker that has not built its routing table yet refuses queries with a retryable 503.

Before routing is ready every table looks missing, so answering "table does not exist" would
be a wrong answer; the client must be told to retry instead.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from engine.broker import BrokerConfig, BrokerInstance
from engine.broker.errors import BROKER_RESOURCE_MISSING_ERROR_CODE


@pytest.fixture
def unrouted_broker():
    # Only the HTTP service runs: no ZooKeeper session, so routing never becomes ready.
    broker = BrokerInstance(BrokerConfig(zk_address="127.0.0.1:1", port=0, bind="127.0.0.1"))
    broker.http_service.start()
    yield broker
    broker.http_service.stop()


def _post(port: int, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/query/sql", data=body, method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_query_before_routing_is_ready_gets_503_naming_the_reason(unrouted_broker):
    status, body = _post(unrouted_broker.port, b'{"sql": "SELECT COUNT(*) FROM airlineStats"}')
    assert status == 503
    [error] = body["exceptions"]
    assert error["errorCode"] == BROKER_RESOURCE_MISSING_ERROR_CODE
    assert "no routing table yet" in error["message"]
    assert "does not exist" not in error["message"]


def test_bad_request_is_still_a_400_before_routing(unrouted_broker):
    status, body = _post(unrouted_broker.port, b"{not json")
    assert status == 400
    assert body["exceptions"][0]["errorCode"] != BROKER_RESOURCE_MISSING_ERROR_CODE
