"""What a server reports about one of its consuming segments, in the shape of Pinot's
``SegmentConsumerInfo`` (``GET /tables/{t}/consumingSegmentsInfo`` on a server). All
offsets and lags are strings; a lag that cannot be computed is ``NOT_CALCULATED``."""

from __future__ import annotations

from engine.common import clock
from engine.realtime.consumer_state import ConsumerState
from engine.realtime.partition_consumer import PartitionConsumer

NOT_CALCULATED = "NOT_CALCULATED"
_CONSUMING = frozenset({ConsumerState.INITIAL_CONSUMING, ConsumerState.CATCHING_UP})


def segment_consumer_info(
    consumer: PartitionConsumer, latest_offset: int | None, *, now_ms: int | None = None
) -> dict:
    """The entry for ``consumer``'s segment. ``latest_offset`` is the partition's latest
    offset upstream (one past its newest message), None when unknown. Records lag is clamped
    at 0: the latest offset is read before the consumer's, which may have passed it meanwhile;
    availability lag is how long ago the newest consumed message was produced, 0
    when caught up."""
    now = clock.now_ms() if now_ms is None else int(now_ms)
    partition = str(consumer.partition)
    current = consumer.current_offset
    stats = consumer.stats
    if latest_offset is None:
        records_lag = availability_lag = NOT_CALCULATED
    else:
        lag = max(0, int(latest_offset) - current)
        records_lag = str(lag)
        if lag == 0:
            availability_lag = "0"
        elif stats.last_message_time_ms is not None:
            availability_lag = str(max(0, now - stats.last_message_time_ms))
        else:
            availability_lag = NOT_CALCULATED
    return {
        "segmentName": consumer.segment.name,
        "consumerState": "CONSUMING" if consumer.state in _CONSUMING else "NOT_CONSUMING",
        "lastConsumedTimestamp": stats.last_consumed_at_ms or 0,
        "partitionToOffsetMap": {partition: str(current)},
        "partitionOffsetInfo": {
            "currentOffsetsMap": {partition: str(current)},
            "latestUpstreamOffsetMap": {
                partition: NOT_CALCULATED if latest_offset is None else str(latest_offset)
            },
            "recordsLagMap": {partition: records_lag},
            "availabilityLagMsMap": {partition: availability_lag},
        },
        # ours, beyond Pinot's shape: messages skipped as malformed (Pinot's rowsWithErrors),
        # and whether the partition is stalled (engine.realtime.stall), since when (epoch ms)
        "rowsWithErrors": stats.rows_malformed,
        "stalled": consumer.stall.stalled,
        "stalledSinceMs": consumer.stall.stalled_since_ms,
    }
