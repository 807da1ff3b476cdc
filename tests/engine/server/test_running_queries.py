"""The running-query registries of servers and brokers: ids, suffixes and bad input."""

from __future__ import annotations

import pytest

from engine.broker.running import RunningQueries as BrokerQueries
from engine.query.runner import QueryToken
from engine.server.running import RunningQueries


def test_a_server_cancels_both_halves_or_one_by_suffix():
    running = RunningQueries()
    offline, realtime = QueryToken(1, None), QueryToken(1, None)
    running.register("Broker_h_1_7", "OFFLINE", offline)
    running.register("Broker_h_1_7", "REALTIME", realtime)
    assert running.cancel("Broker_h_1_7_R") == 1
    assert (offline.cancelled, realtime.cancelled) == (False, True)
    assert running.cancel("Broker_h_1_7") == 2 and offline.cancelled
    running.unregister("Broker_h_1_7", "OFFLINE", offline)
    running.unregister("Broker_h_1_7", "REALTIME", realtime)
    assert running.ids() == [] and running.cancel("Broker_h_1_7") == 0


def test_a_broker_finds_by_request_id_or_client_id():
    running = BrokerQueries("Broker_h_1", http=None)
    query = running.register(7, "SELECT 1", "mine")
    assert running.listing() == {"7": "SELECT 1"}
    assert running.find("7", client=False) is query
    assert running.find("mine", client=True) is query
    assert running.find("8", client=False) is None
    with pytest.raises(ValueError):
        running.find("seven", client=False)
    assert running.cancel(query, 1.0) == {}  # not routed yet: no server to tell
    assert query.cancelled
    running.unregister(query)
    assert running.listing() == {} and running.find("mine", client=True) is None
