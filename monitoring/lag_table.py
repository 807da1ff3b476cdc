"""Sets up lag history on a running cluster: the samples topic, the `consumer_offsets` schema
and REALTIME table through the controller's REST API, and a sampler thread feeding it. Used
by the quickstart; plain module (HTTP and Kafka clients only)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import requests
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from monitoring.errors import KafkaUnavailableError, MonitoringError
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.sampler import LagSampler
from monitoring.tables import DEFAULT_TOPIC, TABLE_NAME, schema, table_config


def ensure_topic(bootstrap: str, topic: str = DEFAULT_TOPIC, timeout_s: float = 10.0) -> None:
    """The samples topic, one partition (so a partition's samples stay in order), unless it
    exists."""
    # quiet: an unreachable cluster is reported once, by the error below
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        if topic in admin.list_topics(timeout=timeout_s).topics:
            return
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout_s)
    except KafkaException as exc:
        raise KafkaUnavailableError(f"cannot create topic '{topic}' on {bootstrap}: {exc}") from exc


def ensure_lag_table(
    controller: str,
    bootstrap: str,
    topic: str = DEFAULT_TOPIC,
    replicas: int | None = None,
    headers: dict[str, str] | None = None,
) -> bool:
    """Creates the topic, then the schema and the REALTIME table reading it from `bootstrap`
    (with `replicas` replicas per partition when given), unless the controller already has
    the table. `headers` go with every controller call (an authenticating controller's
    credentials). True when it created the table."""
    ensure_topic(bootstrap, topic)
    try:
        found = requests.get(f"{controller}/tables/{TABLE_NAME}", headers=headers, timeout=30)
        if found.status_code in (401, 403):
            raise MonitoringError(
                f"the controller at {controller} refused GET /tables/{TABLE_NAME}: "
                f"HTTP {found.status_code} (give credentials with --auth-token)"
            )
        if found.status_code == 200:
            return False
        for path, body in (
            ("/schemas", schema()),
            ("/tables", table_config(bootstrap, topic, replicas)),
        ):
            response = requests.post(f"{controller}{path}", json=body, headers=headers, timeout=60)
            if not response.ok:
                raise MonitoringError(
                    f"creating the {TABLE_NAME} table failed at POST {path}: "
                    f"HTTP {response.status_code} {response.text[:300]}"
                )
    except requests.RequestException as exc:
        raise MonitoringError(f"cannot reach the controller at {controller}: {exc}") from exc
    return True


def start_sampling(
    bootstrap: str, interval_s: float, topic: str = DEFAULT_TOPIC
) -> Callable[[], None]:
    """Samples every group of `bootstrap` every `interval_s` seconds into `topic` on a daemon
    thread. Returns the function that stops it (and waits for the round in progress)."""
    sampler = LagSampler(KafkaGroupReader(bootstrap), topic)
    stop = threading.Event()
    thread = threading.Thread(target=sampler.run, args=(interval_s, stop), daemon=True,
                              name="lag-sampler")  # fmt: skip
    thread.start()

    def stop_sampling() -> None:
        stop.set()
        thread.join(timeout=interval_s + 35)

    return stop_sampling
