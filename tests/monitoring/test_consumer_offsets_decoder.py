"""The `__consumer_offsets` decoder against the byte vectors of ../shared/KAFKA_OFFSETS.md:
real bytes from Burrow's tests and bytes derived from Kafka's formatter tests, whose expected
JSON they must give."""

import pytest

from monitoring.consumer_offsets import (
    ConsumerOffsetsDecoder,
    GroupDeleted,
    OffsetCommit,
    OffsetDeleted,
)
from monitoring.errors import OffsetsDecodeError

h = bytes.fromhex

# Kafka's OffsetMessageFormatterTest objects: group-id / foo / 1.
KEY_V0 = h("0000000867726f75702d69640003666f6f00000001")
KEY_V1 = h("0001000867726f75702d69640003666f6f00000001")
VALUE_V0 = h("0000000000000000006400086d6574616461746100000000000004d2")
VALUE_V1 = h("0001000000000000006400086d6574616461746100000000000004d2ffffffffffffffff")
VALUE_V3 = h("000300000000000000640000000a00086d6574616461746100000000000004d2")
VALUE_V4 = h("000400000000000000640000000a096d6574616461746100000000000004d200")
SEED = {"topic": "foo", "partition": 1, "group": "group-id"}


def decode(key, value):
    decoder = ConsumerOffsetsDecoder()
    record = decoder.decode(key, value)
    return record, decoder.stats


@pytest.mark.parametrize("key", [KEY_V0, KEY_V1])
@pytest.mark.parametrize(
    ("value", "fields"),
    [
        (VALUE_V0, {"version": 0, "offset": 100, "metadata": "metadata",
                    "commitTimestamp": 1234, "expireTimestamp": None}),
        (VALUE_V1, {"version": 1, "offset": 100, "metadata": "metadata",
                    "commitTimestamp": 1234, "expireTimestamp": -1}),
        (b"\x00\x02" + VALUE_V0[2:], {"version": 2, "offset": 100, "metadata": "metadata",
                                      "commitTimestamp": 1234, "expireTimestamp": None}),
        (VALUE_V3, {"version": 3, "offset": 100, "leaderEpoch": 10, "metadata": "metadata",
                    "commitTimestamp": 1234, "expireTimestamp": None}),
        (VALUE_V4, {"version": 4, "offset": 100, "leaderEpoch": 10, "metadata": "metadata",
                    "commitTimestamp": 1234, "expireTimestamp": None}),
    ],
)  # fmt: skip
def test_offset_commit_values_v0_to_v4_give_the_seed_json(key, value, fields):
    record, stats = decode(key, value)
    assert record.to_json() == {**SEED, **fields}
    assert list(record.to_json())[:5] == ["topic", "partition", "group", "version", "offset"]
    assert stats.offset_commits == 1 and stats.skipped_total == 0


def test_kafka_4_1_v4_value_with_the_topic_id_tag():
    topic_id = bytes(range(16))
    tagged = b"\x01" + b"\x00" + b"\x10" + topic_id  # one field: tag 0, 16 bytes
    record, _ = decode(KEY_V1, VALUE_V4[:-1] + tagged)
    assert record.offset == 100 and record.leader_epoch == 10
    assert record.to_json()["topicId"] == "AAECAwQFBgcICQoLDA0ODw"


def test_burrow_vectors_key_v1_and_values_v0_v3_and_untagged_v4():
    key = h("000100097465737467726f7570000974657374746f7069630000000b")
    expected = ("testgroup", "testtopic", 11, 8372, "testdata", 1637)
    values = [
        h("000000000000000020b4000874657374646174610000000000000665"),
        b"\x00\x03" + h("00000000000020b400000000000874657374646174610000000000000665"),
        # Burrow's "v4": compact metadata but no trailing tagged-field byte.
        h("000400000000000020b4000000000974657374646174610000000000000665"),
    ]
    for value in values:
        record, _ = decode(key, value)
        assert isinstance(record, OffsetCommit)
        got = (record.group, record.topic, record.partition, record.offset)
        assert (*got, record.metadata, record.commit_timestamp) == expected
    assert decode(key, values[1])[0].leader_epoch == 0


def test_offset_tombstone_is_a_deletion_and_counted():
    record, stats = decode(KEY_V1, None)
    assert record == OffsetDeleted("group-id", "foo", 1)
    assert record.to_json() == {**SEED, "tombstone": True}
    assert stats.offset_tombstones == 1


def test_group_metadata_v1_from_burrow():
    key = h("000200097465737467726f7570")
    value = h(
        "00010008636f6e73756d657200000001000c7465737470726f746f636f6c000a746573746c6561646572"
        "00000001000c746573746d656d6265726964000c74657374636c69656e746964000e74657374636c6965"
        "6e74686f73740000000400000008000000000000001a0000000000010006746f70696331000000010000"
        "000b00000000"
    )
    record, stats = decode(key, value)
    assert stats.group_metadata == 1
    assert record.to_json() == {
        "group": "testgroup",
        "groupMetadata": {
            "version": 1, "protocolType": "consumer", "generation": 1,
            "protocol": "testprotocol", "leader": "testleader", "currentStateTimestamp": None,
            "members": [{
                "memberId": "testmemberid", "groupInstanceId": None, "clientId": "testclientid",
                "clientHost": "testclienthost", "rebalanceTimeout": 4, "sessionTimeout": 8,
                "subscription": {"version": None, "topics": []},
                "assignment": {"version": 0, "partitions": {"topic1": [11]}},
            }],
        },
    }  # fmt: skip


LEADER = b"tLeader-a42d2baa-bfaa-4b96-9ea2-dee5f42b2ab2"


def test_group_metadata_v2_from_burrow_decodes_to_the_last_byte():
    value = (
        b"\x00\x02\x00\x08consumer\x00\x00\x00\x03\x00\x05range\x00," + LEADER
        + b"\x00\x00\x01i_\x1cJJ\x00\x00\x00\x01\x00," + LEADER
        + b"\x00\x07tMember\x00\x0b/172.18.0.1\x00\x00u0\x00\x00u0"
        + b"\x00\x00\x00\x15\x00\x00\x00\x00\x00\x01\x00\x09testtopic\x00\x00\x00\x00"
        + b"\x00\x00\x00=\x00\x00\x00\x00\x00\x01\x00\x09testtopic\x00\x00\x00\x09"
        + b"".join(i.to_bytes(4, "big") for i in range(9)) + b"\x00\x00\x00\x00"
    )  # fmt: skip
    record, _ = decode(h("000200097465737467726f7570"), value)
    meta = record.to_json()["groupMetadata"]
    assert (meta["generation"], meta["protocol"], meta["currentStateTimestamp"]) == (
        3, "range", 1552078883402,
    )  # fmt: skip
    (member,) = meta["members"]
    assert member["clientHost"] == "/172.18.0.1" and member["sessionTimeout"] == 30000
    assert member["subscription"] == {"version": 0, "topics": ["testtopic"]}
    assert member["assignment"] == {"version": 0, "partitions": {"testtopic": list(range(9))}}


def test_group_metadata_v3_from_burrow_with_a_null_group_instance_id():
    value = (
        b"\x00\x03\x00\x08consumer\x00\x00\x00\x01\x00\x12RoundRobinAssigner\x00," + LEADER
        + b"\x00\x00\x01l\xdf5\x07k\x00\x00\x00\x01"
        + b"\x00\x06member\xff\xff\x00\x06client\x00\x0d/10.10.10.100\xff\xff\xff\xff\x00\x00\x75\x30"
        + b"\x00\x00\x00\x12\x00\x01\x00\x00\x00\x01\x00\x06topic1\x00\x00\x00\x00"
        + b"\x00\x00\x00\x1a\x00\x01\x00\x00\x00\x01\x00\x06topic1\x00\x00\x00\x01"
        + b"\x00\x00\x00\x00\x00\x00\x00\x00"
    )  # fmt: skip
    record, _ = decode(h("000200097465737467726f7570"), value)
    assert record.protocol == "RoundRobinAssigner"
    assert record.current_state_timestamp == 1567112890219
    (member,) = record.members
    assert (member.group_instance_id, member.rebalance_timeout) == (None, -1)
    assert record.to_json()["groupMetadata"]["members"][0]["assignment"] == {
        "version": 1, "partitions": {"topic1": [0]},
    }  # fmt: skip


def test_group_metadata_v4_flexible_from_kafkas_formatter_test():
    key = h("0002000867726f75702d6964")
    value = h(
        "000409636f6e73756d6572000000010672616e6765076c656164657200000000000004d202096d656d62"
        "65722d311167726f75702d696e7374616e63652d3109636c69656e742d3107686f73742d31000003e800"
        "0005dc0300010301020000"
    )
    record, _ = decode(key, value)
    assert record.to_json() == {
        "group": "group-id",
        "groupMetadata": {
            "version": 4, "protocolType": "consumer", "generation": 1, "protocol": "range",
            "leader": "leader", "currentStateTimestamp": 1234,
            "members": [{
                "memberId": "member-1", "groupInstanceId": "group-instance-1",
                "clientId": "client-1", "clientHost": "host-1", "rebalanceTimeout": 1000,
                "sessionTimeout": 1500,
                # not valid consumer-protocol bytes: kept as base64, as Kafka's formatter prints
                "subscription": "AAE=", "assignment": "AQI=",
            }],
        },
    }  # fmt: skip


def test_group_tombstone():
    record, stats = decode(h("0002000867726f75702d6964"), None)
    assert record == GroupDeleted("group-id")
    assert record.to_json() == {"group": "group-id", "groupMetadata": None}
    assert stats.group_tombstones == 1


def test_unknown_key_types_and_value_versions_are_skipped_and_counted():
    decoder = ConsumerOffsetsDecoder()
    assert decoder.decode(h("0003000867726f75702d6964"), h("0000")) is None  # KIP-848 record
    assert decoder.decode(h("000b0001"), None) is None  # share group record
    assert decoder.decode(KEY_V1, b"\x00\x05" + VALUE_V4[2:]) is None
    assert decoder.decode(h("0002000867726f75702d6964"), h("0009")) is None
    assert dict(decoder.stats.skipped) == {
        "key type 3": 1, "key type 11": 1,
        "offset commit value v5": 1, "group metadata value v9": 1,
    }  # fmt: skip
    assert decoder.stats.offset_commits == 0


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (b"\x00", None, "key of 1 byte(s) has no record type"),
        (h("0001000867726f7570"), VALUE_V0, "offset commit key (type 1): cannot read field 'group'"),
        (KEY_V1[:-2], VALUE_V0, "offset commit key (type 1): cannot read field 'partition'"),
        (KEY_V1, VALUE_V0[:9], "offset commit value v0: cannot read field 'offset'"),
        (KEY_V1, VALUE_V3[:12], "offset commit value v3: cannot read field 'leaderEpoch'"),
        (KEY_V1, VALUE_V1[:-3], "offset commit value v1: cannot read field 'expireTimestamp'"),
        (KEY_V1, VALUE_V4[:-1] + b"\x01\x00\x10\x00", "v4: cannot read field 'tagged fields'"),
        (KEY_V1, b"\x00", "offset commit value: cannot read field 'version'"),
        (h("0002000867726f75702d6964"), h("0003000863"), "group metadata value v3: cannot read field 'protocolType'"),
    ],
)  # fmt: skip
def test_broken_bytes_of_a_known_type_name_the_record_and_field(key, value, message):
    with pytest.raises(OffsetsDecodeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ConsumerOffsetsDecoder().decode(key, value)


def test_long_metadata_and_null_metadata_take_the_careful_path_with_the_same_result():
    long_text = "m" * 300
    length = len(long_text) + 1  # compact length as an unsigned varint: 2 bytes here
    varint = bytes([(length & 0x7F) | 0x80, length >> 7])
    value = VALUE_V4[:14] + varint + long_text.encode() + VALUE_V4[-9:]
    record, _ = decode(KEY_V1, value)
    assert (record.metadata, record.commit_timestamp) == (long_text, 1234)
    null_metadata = VALUE_V3[:14] + b"\xff\xff" + VALUE_V3[-8:]
    record, _ = decode(KEY_V1, null_metadata)
    assert (record.metadata, record.offset, record.leader_epoch) == (None, 100, 10)
