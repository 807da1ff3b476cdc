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
