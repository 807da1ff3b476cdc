"""Secrets in configs: masked when read, kept when a masked value is written back."""

from __future__ import annotations

import orjson

from engine.clusterstate.records import table_config_to_record
from engine.spi.secrets import MASK, mask_secrets, mask_znode, restore_secrets, restore_znode

CONFIG = {
    "tableName": "events", "tableType": "REALTIME",
    "tableIndexConfig": {"streamConfigs": {
        "stream.kafka.topic.name": "events",
        "sasl.jaas.config": 'org.apache.kafka...PlainLoginModule required password="kafka-pw";',
        "ssl.truststore.password": "trust-pw", "ssl.key.password": "",
    }},
    "ingestionConfig": {"batchIngestionConfig": {"batchConfigMaps": [
        {"inputDirURI": "s3://bucket/in", "input.fs.prop.accessKey": "AKIA",
         "input.fs.prop.secretKey": "s3-secret"},
    ]}},
    "task": {"taskTypeConfigsMap": {"X": {"auth.token": "t0k3n", "api_key": "k3y", "cron": "0 * *"}}},
}  # fmt: skip
SECRETS = ("kafka-pw", "trust-pw", "s3-secret", "t0k3n", "k3y")


def test_secret_keys_are_masked_everywhere_and_others_kept():
    masked = mask_secrets(CONFIG)
    text = orjson.dumps(masked).decode()
    assert not any(secret in text for secret in SECRETS)
    streams = masked["tableIndexConfig"]["streamConfigs"]
    assert streams["sasl.jaas.config"] == MASK and streams["ssl.key.password"] == ""
    batch = masked["ingestionConfig"]["batchIngestionConfig"]["batchConfigMaps"][0]
    assert batch["input.fs.prop.accessKey"] == "AKIA" and batch["inputDirURI"] == "s3://bucket/in"
    assert masked["task"]["taskTypeConfigsMap"]["X"]["cron"] == "0 * *"


def test_a_masked_value_written_back_keeps_the_stored_secret():
    edited = mask_secrets(CONFIG)
    edited["tableIndexConfig"]["streamConfigs"]["ssl.truststore.password"] = "new-pw"
    restored = restore_secrets(edited, CONFIG)
    streams = restored["tableIndexConfig"]["streamConfigs"]
    assert streams["ssl.truststore.password"] == "new-pw"  # a new value replaces it
    assert (
        streams["sasl.jaas.config"]
        == CONFIG["tableIndexConfig"]["streamConfigs"]["sasl.jaas.config"]
    )
    assert restored["ingestionConfig"] == CONFIG["ingestionConfig"]


def test_znodes_hold_configs_as_json_text_and_are_masked_and_restored_too():
    stored = table_config_to_record(CONFIG).to_bytes()
    shown = mask_znode(stored)
    assert not any(secret.encode() in shown for secret in SECRETS)
    assert orjson.loads(restore_znode(shown, stored)) == orjson.loads(stored)
    assert mask_znode(b"not json") == b"not json"
