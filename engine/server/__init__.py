"""The server process (Pinot's server): hosts segments and answers segment-level queries.

Public API::

    from engine.server import ServerConfig, ServerInstance

    server = ServerInstance(ServerConfig(zk_address="127.0.0.1:2181", query_port=8098,
                                         admin_port=8097, data_dir=Path("...")))
    server.start()    # registers Server_<host>_<port>, follows the ideal states
    server.stop()

Modules, bottom-up: ``errors``; ``http`` (a small HTTP/1.1 service, also used by the broker);
``participant`` (ZooKeeper session, instance config, live instance; also used by the broker);
``schemas`` (schema cache) and ``plans`` (plan cache), both also used by the broker;
``download`` and ``segments`` (deep store fetch and the segment state transitions);
``follower`` (the loop that follows ideal states and messages); ``query`` (the query
endpoint); ``metrics``; ``instance`` (the process).

The server learns about the cluster only from ZooKeeper (see ``engine.clusterstate``) and
downloads segments from ``segment.download.url``.
"""

from engine.server.errors import BadQueryRequest, SegmentLoadError, ServerError
from engine.server.instance import ServerConfig, ServerInstance

__all__ = ["BadQueryRequest", "SegmentLoadError", "ServerConfig", "ServerError", "ServerInstance"]
