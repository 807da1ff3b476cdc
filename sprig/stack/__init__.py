"""Real services on free local ports: ZooKeeper, Redis and Apache Kafka.

The quickstart, `sprig stack` and the pytest session fixtures all start them through
`LocalStack`, so what the tests exercise is what a person runs.
"""

from sprig.stack.kafka import KafkaService, MavenMissingError, check_maven, kafka_cluster
from sprig.stack.process import ServiceError, ServiceProcess
from sprig.stack.services import JavaMissingError, RedisService, ZooKeeperService, check_java
from sprig.stack.stack import LocalStack

__all__ = [
    "JavaMissingError",
    "KafkaService",
    "LocalStack",
    "MavenMissingError",
    "RedisService",
    "ServiceError",
    "ServiceProcess",
    "ZooKeeperService",
    "check_java",
    "check_maven",
    "kafka_cluster",
]
