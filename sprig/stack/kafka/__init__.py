"""The local Apache Kafka: its jars (resolved with Maven) and its nodes (KRaft mode)."""

from sprig.stack.kafka.jars import MavenMissingError, check_maven, kafka_libs, kafka_version
from sprig.stack.kafka.service import KafkaService, kafka_cluster

__all__ = [
    "KafkaService",
    "MavenMissingError",
    "check_maven",
    "kafka_cluster",
    "kafka_libs",
    "kafka_version",
]
