"""ZK metadata of LLC segments and the row target of new ones (unit tests, no services)."""

from __future__ import annotations

from cluster.logic.realtime import llc_metadata as llc
from engine.clusterstate.records import SegmentZKMetadata
from engine.realtime.llc_name import LLCSegmentName
from engine.segment.metadata import SegmentMetadata
from engine.stream.config import parse_stream_config

NOW_MS = 1_785_585_600_000
BASE = {
    "streamType": "kafka",
    "stream.kafka.topic.name": "t",
    "stream.kafka.decoder.class.name": "org.apache.pinot.plugin.stream.kafka."
    "KafkaJSONMessageDecoder",
}


def test_new_consuming_segment_has_pinots_fields():
    name = LLCSegmentName.create("events", 2, 0, NOW_MS)
    meta = llc.new_consuming_segment("events_REALTIME", name, 1234, 2, 50_000, now_ms=NOW_MS)
    record = meta.to_record()
    assert record.id == "events__2__0__20260801T1200Z"
    fields = record.simple_fields
    assert fields["segment.realtime.startOffset"] == "1234"
    assert fields["segment.realtime.numReplicas"] == "2"
    assert fields["segment.realtime.status"] == "IN_PROGRESS"
    assert fields["segment.flush.threshold.size"] == "50000"
    assert fields["segment.creation.time"] == str(NOW_MS)
    assert "segment.realtime.endOffset" not in fields
    assert llc.status_of(meta) == llc.IN_PROGRESS
    # a record read back from ZK keeps the realtime keys
    again = SegmentZKMetadata.from_record(record, "events_REALTIME")
    assert again.extra["segment.realtime.startOffset"] == "1234"


def test_committed_segment_is_done_with_the_built_facts():
    name = LLCSegmentName.create("events", 0, 4, NOW_MS)
    consuming = llc.new_consuming_segment("events_REALTIME", name, 100, 1, 10, now_ms=NOW_MS)
    built = SegmentMetadata(
        segment_name=str(name), table_name="events_REALTIME", total_docs=10, crc=987,
        creation_time=NOW_MS, columns={}, start_time_ms=NOW_MS - 5000, end_time_ms=NOW_MS - 10,
    )  # fmt: skip
    done = llc.committed_segment(consuming, 110, built, download_url="http://c/segments/e/x",
                                 size_in_bytes=4096)  # fmt: skip
    fields = done.to_record().simple_fields
    assert fields["segment.realtime.endOffset"] == "110"
    assert fields["segment.realtime.startOffset"] == "100"
    assert fields["segment.realtime.status"] == "DONE"
    assert (fields["segment.start.time"], fields["segment.end.time"]) == (
        str(NOW_MS - 5000),
        str(NOW_MS - 10),
    )
    assert fields["segment.time.unit"] == "MILLISECONDS"
    assert fields["segment.total.docs"] == "10" and fields["segment.crc"] == "987"
    assert fields["segment.use.data.crc"] == "true" and fields["segment.size.in.bytes"] == "4096"
    assert fields["segment.download.url"] == "http://c/segments/e/x"
    empty = SegmentMetadata(str(name), "events_REALTIME", 0, 1, NOW_MS, {})
    nothing = llc.committed_segment(consuming, 100, empty, download_url="", size_in_bytes=1,
                                    now_ms=NOW_MS)  # fmt: skip
    assert nothing.start_time == nothing.end_time == NOW_MS
    assert llc.status_of(SegmentZKMetadata("pushed", "events_REALTIME")) == llc.UPLOADED


def test_row_threshold_rules():
    per_server = parse_stream_config({**BASE, "realtime.segment.flush.threshold.rows": "90000"})
    assert llc.row_threshold(per_server.flush, 3) == (30_000, {})
    fixed = parse_stream_config(
        {**BASE, "realtime.segment.flush.threshold.rows": "90000",
         "realtime.segment.flush.threshold.segment.rows": "500"}
    )  # fmt: skip
    assert llc.row_threshold(fixed.flush, 3) == (500, {})
    auto = parse_stream_config({**BASE, "realtime.segment.flush.threshold.segment.size": "1M"})
    assert llc.row_threshold(auto.flush, 4) == (100_000, {})  # autotune starts at initialRows
    committed = SegmentZKMetadata("s", "t_REALTIME", total_docs=100_000)
    rows, extra = llc.row_threshold(auto.flush, 4, committed, committing_size_bytes=4 << 20)
    assert rows == 25_000  # 100k rows made 4 MiB; 1 MiB is a quarter of that
    committed.extra.update(extra)
    committed.total_docs = 25_000
    rows, _ = llc.row_threshold(auto.flush, 4, committed, committing_size_bytes=512 << 10)
    assert 25_000 < rows < 50_000  # the estimate moves towards the newer ratio, smoothed
