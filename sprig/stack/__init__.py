"""Real services on free local ports: ZooKeeper, Redis and a Kafka-protocol broker.

The quickstart, `sprig stack` and the pytest session fixtures all start them through
`LocalStack`, so what the tests exercise is what a person runs.
"""

from sprig.stack.process import ServiceError, ServiceProcess
from sprig.stack.services import (
    JavaMissingError,
    KafkaService,
    RedisService,
    ZooKeeperService,
    check_java,
)
from sprig.stack.stack import LocalStack

__all__ = [
    "JavaMissingError",
    "KafkaService",
    "LocalStack",
    "RedisService",
    "ServiceError",
    "ServiceProcess",
    "ZooKeeperService",
    "check_java",
]
