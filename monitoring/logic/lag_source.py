"""Where the controller reads consumer lag: live from the Kafka cluster that the
`consumer_offsets` REALTIME table's stream points at (the sampler samples that cluster and
produces to it), and the history from that table through a live broker."""

from __future__ import annotations

from cluster import models
from cluster.api.common import store
from cluster.logic.forward_query import forward_query, own_broker_headers
from controller.errors import ServiceUnavailable
from engine.spi import TableConfig
from engine.stream.config import table_stream_configs
from monitoring import history
from monitoring.evaluation.window import Sample
from monitoring.kafka_admin import KafkaGroupReader
from monitoring.tables import TABLE_NAME

# How far back the Burrow window and the alert rules look into the stored samples.
HISTORY_WINDOW_MS = 6 * 3600 * 1000


def kafka_bootstrap() -> str:
    """The broker list of the consumer_offsets table's stream; 503 naming what to do when the
    table is not there."""
    row = models.TableConfig.objects.filter(table_name=TABLE_NAME, table_type="REALTIME").first()
    if row is None:
        raise ServiceUnavailable(
            f"no {TABLE_NAME} REALTIME table: create it from monitoring/tables "
            "(the quickstart does) so the controller knows which Kafka cluster to watch"
        )
    stream = table_stream_configs(TableConfig.from_json(row.config))[0]
    if not stream.broker_list:
        raise ServiceUnavailable(f"the {TABLE_NAME} table's stream names no broker list")
    return stream.broker_list


def reader() -> KafkaGroupReader:
    return KafkaGroupReader(kafka_bootstrap())


def query_rows(sql: str) -> list[dict]:
    """Rows of a query through a live broker (with the controller's credentials for it);
    ValueError with the broker's message."""
    status, answer = forward_query(store(), {"sql": sql}, headers=own_broker_headers())
    if status != 200 and not answer.get("exceptions"):
        raise ValueError(f"the broker answered HTTP {status}")
    return history.rows_of(answer)


def stored_samples(group: str, until_ms: int) -> dict[tuple[str, int], list[Sample]]:
    """The group's samples of the last HISTORY_WINDOW_MS, by topic partition."""
    sql = history.samples_sql(group, until_ms - HISTORY_WINDOW_MS, until_ms + 1)
    return history.samples_by_partition(query_rows(sql))


def lag_per_minute(group: str, since_ms: int, until_ms: int) -> dict[str, list[dict]]:
    return history.lag_series(query_rows(history.lag_per_minute_sql(group, since_ms, until_ms)))
