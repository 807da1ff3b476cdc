"""Upsert and dedup tables (Pinot's ``upsertConfig`` and ``dedupConfig``).

Per table and server a ``TableMetadata`` holds one ``PartitionMetadata`` per stream partition:
the primary-key map (``key_index``, ``entries``) and the valid-doc bitmaps of the partition's
segments (``validity``). Consuming segments index through a ``ConsumingGate``
(``engine.realtime.MutableSegment.gate``); the server adds and removes immutable segments and
asks ``query_view`` which docs each query counts. The configs and their validation are in
``engine.spi.upsert_config`` and ``engine.spi.upsert_validation``.
"""

from engine.upsert.context import UpsertContext
from engine.upsert.partition import PartitionMetadata
from engine.upsert.table import ConsumingGate, ServerDefaults, TableMetadata

__all__ = ["ConsumingGate", "PartitionMetadata", "ServerDefaults", "TableMetadata", "UpsertContext"]
