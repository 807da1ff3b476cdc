"""Each real service of the stack answers in its own protocol."""

import socket
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from sprig.stack import JavaMissingError, check_java
from sprig.stack.cluster import minion_process

pytestmark = pytest.mark.integration


def test_zookeeper_creates_and_reads_a_znode(zookeeper):
    client = KazooClient(hosts=zookeeper.address, timeout=10)
    client.start(timeout=15)
    try:
        path = f"/sprig-test/{uuid.uuid4().hex}"
        client.create(path, b'{"hello": "zk"}', makepath=True)
        data, stat = client.get(path)
        assert data == b'{"hello": "zk"}'
        assert stat.version == 0
    finally:
        client.stop()
        client.close()


@pytest.mark.slow
def test_a_celery_task_runs_on_a_real_minion_worker(redis_server, zookeeper, tmp_path):
    """A task sent to Redis is run by a separate `sprig minion` process and its result comes
    back; the minion is registered in ZooKeeper while it runs, and gone once stopped."""
    from celery import Celery

    from engine.clusterstate import ClusterStore

    cluster = f"minion_{uuid.uuid4().hex[:6]}"
    env = {
        "SPRIG_REDIS_URL": redis_server.url,
        "SPRIG_DATA_DIR": str(tmp_path / "data"),
        "SPRIG_ZK": zookeeper.address,
        "SPRIG_CLUSTER_NAME": cluster,
    }
    worker = minion_process(tmp_path, env, tags="minion_untagged,spark_heavy")
    client = KazooClient(hosts=zookeeper.address, timeout=10)
    client.start(timeout=15)
    store = ClusterStore(client, cluster)
    worker.start()
    try:
        worker.wait_ready()
        app = Celery("test", broker=redis_server.url, backend=redis_server.url)
        token = uuid.uuid4().hex
        result = app.send_task("sprig.minion.ping", args=[token], queue="minion_untagged")
        answer = result.get(timeout=30)
        assert answer["token"] == token
        assert answer["pid"] != 0
        app.close()
        deadline = time.monotonic() + 30
        while not store.live_instances() and time.monotonic() < deadline:
            time.sleep(0.2)
        (instance_id,) = store.live_instances()
        assert instance_id == f"Minion_{socket.gethostname()}_minion"
        config = store.instance_config(instance_id)
        assert config.tags == ["minion_untagged", "spark_heavy"]
        assert config.enabled
    finally:
        worker.stop()
    try:
        assert not worker.alive()
        assert store.live_instances() == {}  # the session closed on shutdown: gone at once
        assert store.instance_config(instance_id) is not None  # the config stays, as in Pinot
    finally:
        client.stop()
        client.close()


def test_kafka_message_is_consumed_in_a_group_and_its_commit_read_back(kafka):
    topic = f"sprig-test-{uuid.uuid4().hex[:8]}"
    group = f"group-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    for future in admin.create_topics(
        [NewTopic(topic, num_partitions=1, replication_factor=1)]
    ).values():
        future.result(timeout=10)

    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
    producer.produce(topic, key=b"k1", value=b'{"event": 1}')
    assert producer.flush(10) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        message = None
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        assert message is not None and message.error() is None
        assert message.value() == b'{"event": 1}'
        consumer.commit(message=message, asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset == message.offset() + 1
    finally:
        consumer.close()

    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
    offsets = admin.list_consumer_group_offsets(request)[group].result(timeout=10)
    assert [tp.offset for tp in offsets.topic_partitions] == [message.offset() + 1]


def test_missing_java_is_a_clear_message_with_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaMissingError) as err:
        check_java()
    assert "Java 17 or newer is required" in str(err.value)
    assert "apt-get install openjdk-17-jre-headless" in str(err.value)


def test_an_old_java_is_rejected_by_version(monkeypatch, tmp_path):
    fake = tmp_path / "java"
    fake.write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaMissingError, match=r'found: openjdk version "11.0.2"'):
        check_java()


def test_redis_keeps_queued_work_across_a_crash(tmp_path):
    """Redis writes an append-only file, so a list (a Celery queue) outlives a SIGKILL."""
    import os
    import signal

    import redis

    from sprig.stack import RedisService

    service = RedisService(tmp_path)
    service.start()
    try:
        service.wait_ready()
        client = redis.Redis.from_url(service.url)
        client.lpush("minion_untagged", b"task-1", b"task-2")
        time.sleep(1.5)  # appendfsync everysec
        os.kill(service.pid, signal.SIGKILL)
        service.process.popen.wait(10)
        service.process.start()
        service.wait_ready()
        client = redis.Redis.from_url(service.url)
        assert client.lrange("minion_untagged", 0, -1) == [b"task-2", b"task-1"]
    finally:
        service.stop()
