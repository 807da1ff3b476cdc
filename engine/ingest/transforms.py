"""Ingestion transforms (placeholder chain; functions are added in engine.ingest.functions)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from engine.spi.schema import Schema
from engine.spi.table_config import TableConfig


class RecordTransformer:
    """Applies ``ingestionConfig.transformConfigs`` and ``filterConfig`` to record batches."""

    def __init__(self, schema: Schema, table_config: TableConfig | None):
        self.schema = schema
        self.table_config = table_config

    def transform(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, np.ndarray | None]:
        """The batch with transformed columns, and a keep-mask (None = keep all)."""
        return batch, None
