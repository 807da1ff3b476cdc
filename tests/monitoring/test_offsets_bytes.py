"""The test encoder writes exactly the bytes of Kafka's own vectors."""

from tests.monitoring.offsets_bytes import commit_key, commit_value_v3


def test_encoder_matches_the_kafka_vectors():
    assert commit_key("group-id", "foo", 1).hex() == "0001000867726f75702d69640003666f6f00000001"
    assert commit_value_v3(100, 1234, "metadata", 10).hex() == (
        "000300000000000000640000000a00086d6574616461746100000000000004d2"
    )
