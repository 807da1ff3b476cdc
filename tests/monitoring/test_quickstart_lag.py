"""`sprig quickstart` samples its own Kafka's consumer lag into the consumer_offsets table,
so the console's consumer-lag page has data: a group that commits in the quickstart's Kafka is
listed with its lag, and its samples reach the table through the broker."""

from __future__ import annotations

import os
import re
import signal
import time
import uuid

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster_e2e.test_quickstart import _pids, _start, _stop, _wait_ready

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_quickstart_samples_its_own_kafka(tmp_path, zookeeper):
    proc, log = _start(tmp_path, "--external", "--no-data", env_extra={
        "SPRIG_ZK": zookeeper.address, "SPRIG_DEEP_STORE_URI": str(tmp_path / "deepstore"),
        "SPRIG_CLUSTER_NAME": f"qslag_{uuid.uuid4().hex[:8]}",
    })  # fmt: skip
    try:
        text = _wait_ready(proc, log, 300)
        kafka = re.search(r"Sampling consumer lag of (\S+) every 30 s", text).group(1)
        console = re.search(r"Console: (http://localhost:\d+)", text).group(1)
        # one partition, created up front: an auto-created topic has several
        admin = AdminClient({"bootstrap.servers": kafka})
        admin.create_topics([NewTopic("qs-orders", num_partitions=1)])["qs-orders"].result(10)
        producer = Producer({"bootstrap.servers": kafka})
        for n in range(3):
            producer.produce("qs-orders", value=b"%d" % n)
            assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": kafka, "group.id": "qs-readers",
                             "enable.auto.commit": False})  # fmt: skip
        consumer.commit(offsets=[TopicPartition("qs-orders", 0, 1)], asynchronous=False)
        consumer.close()

        described = requests.get(f"{console}/consumerGroups/qs-readers", timeout=30).json()
        assert [(p["committed"], p["endOffset"], p["lag"]) for p in described["partitions"]] == [
            (1, 3, 2)
        ]
        deadline = time.monotonic() + 90  # the next sampling round, then consumption
        series = {}
        while not series and time.monotonic() < deadline:
            time.sleep(2)
            series = (
                requests.get(f"{console}/consumerGroups/qs-readers/lagHistory", timeout=30)
                .json()
                .get("series", {})
            )
        assert [p["lag"] for p in series["qs-orders/0"]][-1:] == [2], series
        _stop(proc, log, _pids(text))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
