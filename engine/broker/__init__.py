"""The broker process (Pinot's broker): routes a query to the servers, gathers and reduces.

Public API::

    from engine.broker import BrokerConfig, BrokerInstance

    broker = BrokerInstance(BrokerConfig(zk_address="127.0.0.1:2181", port=8099))
    broker.start()    # registers Broker_<host>_<port>, builds routing from ZooKeeper
    broker.stop()

Modules, bottom-up: ``errors``; ``pruning`` (time and partition pruning on segment metadata,
with ``engine.spi.partition``); ``routing`` (routing tables from the external views, kept
current by watches); ``selection`` (balanced replica choice and server
health); ``time_boundary`` (hybrid tables); ``transport`` (keep-alive connections to the
servers); ``scatter`` (all requests written, then the answers gathered); ``handler`` (one
query, end to end); ``instance`` (the process and its HTTP API).

The broker builds on ``engine.runtime`` (HTTP service, ZooKeeper membership, follow loop,
metrics, schema cache) like the server, imports nothing from ``engine.server``, and learns
about the cluster only from ZooKeeper.
"""

from engine.broker.errors import BadBrokerRequest, BrokerError
from engine.broker.instance import BrokerConfig, BrokerInstance

__all__ = ["BadBrokerRequest", "BrokerConfig", "BrokerError", "BrokerInstance"]
