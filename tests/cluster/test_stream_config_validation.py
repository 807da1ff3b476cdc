"""POST /tables refuses a REALTIME config whose stream we cannot consume or decode, with a 400
naming the key; the example configs are accepted unchanged."""

from __future__ import annotations

import copy

import pytest

from tests.cluster.conftest import register_servers

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
STREAMS = "ingestionConfig.streamIngestionConfig.streamConfigMaps[0]"


def test_undecodable_stream_is_a_400_naming_the_key(api, store, airline_schema,
                                                    airline_realtime_config):  # fmt: skip
    assert api.post("/schemas", airline_schema, format="json").status_code == 200
    register_servers(api, 1)
    config = copy.deepcopy(airline_realtime_config)
    stream = config["ingestionConfig"]["streamIngestionConfig"]["streamConfigMaps"][0]
    stream["stream.kafka.decoder.class.name"] = "com.example.ThriftishDecoder"
    response = api.post("/tables", config, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["field"] == f"{STREAMS}.stream.kafka.decoder.class.name"
    assert "com.example.ThriftishDecoder" in body["error"]
    assert store.table_config("airlineStats_REALTIME") is None  # nothing was published

    stream["stream.kafka.decoder.class.name"] = (
        "org.apache.pinot.plugin.stream.kafka.KafkaJSONMessageDecoder"
    )
    stream["stream.kafka.consumer.prop.auto.offset.reset"] = "sometime"
    response = api.post("/tables", config, format="json")
    assert response.status_code == 400
    assert response.json()["field"] == f"{STREAMS}.stream.kafka.consumer.prop.auto.offset.reset"

    response = api.post("/tables", airline_realtime_config, format="json")
    assert response.status_code == 200, response.content
