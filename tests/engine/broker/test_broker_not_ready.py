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
from engine.query.errors import TableNotFoundError
from engine.query.response import error_response, exception_response


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
    assert body == exception_response(BROKER_RESOURCE_MISSING_ERROR_CODE, error["message"])


def test_bad_request_is_still_a_400_before_routing(unrouted_broker):
    status, body = _post(unrouted_broker.port, b"{not json")
    assert status == 400
    assert body["exceptions"][0]["errorCode"] != BROKER_RESOURCE_MISSING_ERROR_CODE


def test_every_error_body_has_one_shape():
    """A query error, the broker's refusals and the controller's proxy errors all build
    Pinot's BrokerResponse with only exceptions: no resultTable key, zero statistics."""
    body = exception_response(190, "TableDoesNotExistError: table 't' does not exist")
    assert error_response(TableNotFoundError(body["exceptions"][0]["message"])) == body
    assert "resultTable" not in body
    assert body["partialResult"] is True and body["numGroupsLimitReached"] is False
    assert {
        k: v for k, v in body.items() if k.startswith("num") and k != "numGroupsLimitReached"
    } == dict.fromkeys(
        [
            "numServersQueried",
            "numServersResponded",
            "numDocsScanned",
            "numEntriesScannedInFilter",
            "numEntriesScannedPostFilter",
            "numSegmentsQueried",
            "numSegmentsProcessed",
            "numSegmentsMatched",
            "numConsumingSegmentsQueried",
        ],
        0,
    )
