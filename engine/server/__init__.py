"""The server process (Pinot's server): hosts segments and answers segment-level queries.

Public API::

    from engine.server import ServerConfig, ServerInstance

    server = ServerInstance(ServerConfig(zk_address="127.0.0.1:2181", query_port=8098,
                                         admin_port=8097, data_dir=Path("...")))
    server.start()    # registers Server_<host>_<port>, follows the ideal states
    server.stop()

It builds on ``engine.runtime`` (HTTP service, ZooKeeper membership and follow loop, metrics,
schema cache). Modules, bottom-up: ``errors``; ``download`` and ``segments`` (deep store
fetch and the segment state transitions); ``follower`` (the loop that follows ideal states and messages); ``query`` (the query
endpoint); ``metrics`` (its Prometheus collectors); ``instance`` (the process).

The server learns about the cluster only from ZooKeeper (see ``engine.clusterstate``) and
downloads segments from ``segment.download.url``.
"""

from engine.server.errors import BadQueryRequest, SegmentLoadError, ServerError
from engine.server.instance import ServerConfig, ServerInstance

__all__ = ["BadQueryRequest", "SegmentLoadError", "ServerConfig", "ServerError", "ServerInstance"]
