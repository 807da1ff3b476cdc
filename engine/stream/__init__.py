"""The stream SPI: stream configs, message decoders and the Kafka partition consumer.

Public API::

    from engine.stream.config import parse_stream_config, table_stream_configs
    table_stream_configs(table_config) -> [StreamConfig]   # ConfigError(.field) if unusable
    StreamConfig: topic, decoder ("json"|"avro"|"csv"), decoder_props, broker_list,
        offset_criteria (OffsetCriteria: kind smallest|largest|period|timestamp),
        consumer_props (passed to the Kafka client), partition_ids, fetch_timeout_ms,
        flush (FlushThreshold: rows, segment_rows, time_ms, segment_size_bytes, ...),
        commit_timeout_seconds, server_upload_to_deep_store, populate_metadata

    from engine.stream.decoders import MessageDecoder
    MessageDecoder.for_stream(stream_config, schema).decode([bytes]) -> DecodedBatch(
        batch: pa.RecordBatch, positions: [payload index per row], errors: {index: why})

    from engine.stream.kafka import KafkaPartitionConsumer, KafkaMetadataProvider
    consumer = KafkaPartitionConsumer(stream_config, partition, client_id)   # assign(), no group
    consumer.start(offset); consumer.fetch(start, end=None, timeout_ms=5000) -> MessageBatch(
        values, offsets, timestamps_ms, keys, next_offset)   # [start, end); empty on timeout
    meta = KafkaMetadataProvider(stream_config)
    meta.partition_ids() / .earliest_offset(p) / .latest_offset(p) / .offset_for(p, criteria)

Errors: ``engine.stream.errors`` StreamError -> TransientStreamError (retry),
PermanentStreamError (stop the partition), OffsetOutOfRangeError.
"""
