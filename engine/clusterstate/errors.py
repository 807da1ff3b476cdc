"""Errors of the cluster-state layer, under the engine's one exception tree."""

from __future__ import annotations

from engine.common.errors import EngineError


class ClusterStateError(EngineError):
    """A cluster-state record could not be read, decoded or written."""


class ZooKeeperUnavailableError(ClusterStateError):
    """ZooKeeper cannot be reached (not connected, connection lost or session expired).

    Callers should retry later; the kazoo client reconnects by itself."""


class ConcurrentUpdateError(ClusterStateError):
    """A versioned update lost the race too many times in a row."""


class ZnodeTooLargeError(ClusterStateError):
    """A write bigger than one znode may hold. Refused before it is sent: ZooKeeper answers
    a packet over its ``jute.maxbuffer`` by closing the connection, which costs the writer
    its session (ephemeral nodes, leadership) rather than just the write."""

    def __init__(self, path: str, size: int, limit: int):
        self.path, self.size, self.limit = path, size, limit
        super().__init__(
            f"{path} would be {size} bytes, over the {limit}-byte limit of one ZooKeeper node"
        )
