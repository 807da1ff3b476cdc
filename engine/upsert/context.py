"""What a table's upsert or dedup metadata needs to know of its configs, read once."""

from __future__ import annotations

import dataclasses

from engine.common.errors import ConfigError
from engine.spi.schema import Schema
from engine.spi.upsert_config import DedupConfig, UpsertConfig, UpsertMode
from engine.upsert.comparison import ComparisonReader
from engine.upsert.keys import KeyReader
from engine.upsert.partial import PartialMerger


@dataclasses.dataclass
class UpsertContext:
    table: str  # with type
    schema: Schema
    config: UpsertConfig | None  # None: a dedup table
    dedup: DedupConfig | None
    keys: KeyReader
    comparison: ComparisonReader | None  # upsert: the comparison columns; dedup: the time
    delete_column: str | None = None
    merger: PartialMerger | None = None
    ttl: float = 0.0  # metadataTTL
    deleted_ttl: float = 0.0  # deletedKeysTTL

    @classmethod
    def of(cls, table_config, schema: Schema) -> UpsertContext | None:
        """None for a table that neither upserts nor dedups."""
        upsert, dedup = UpsertConfig.of(table_config), DedupConfig.of(table_config)
        if upsert is None and dedup is None:
            return None
        types = {f.name: f.data_type for f in schema.fields}
        pks = list(schema.primary_key_columns)
        if not pks:
            raise ConfigError("primaryKeyColumns",
                              "Upsert/Dedup table must have primary key columns in the schema")  # fmt: skip
        hash_function = (upsert or dedup).hash_function
        keys = KeyReader(pks, types, hash_function)
        name = table_config.table_name_with_type
        if upsert is None:
            column = dedup.time_column_of(table_config)
            comparison = ComparisonReader([column], types) if column else None
            return cls(name, schema, None, dedup, keys, comparison, ttl=dedup.metadata_ttl)
        columns = list(upsert.comparison_columns_of(table_config))
        merger = None
        if upsert.mode is UpsertMode.PARTIAL:
            merger = PartialMerger(upsert, schema, pks, columns)
        return cls(name, schema, upsert, None, keys, ComparisonReader(columns, types),
                   delete_column=upsert.delete_record_column, merger=merger,
                   ttl=upsert.metadata_ttl, deleted_ttl=upsert.deleted_keys_ttl)  # fmt: skip

    @property
    def is_dedup(self) -> bool:
        return self.config is None

    @property
    def delete_type(self):
        return self.schema.field(self.delete_column).data_type if self.delete_column else None

    @property
    def sequential(self) -> bool:
        """Rows decided one at a time: partial merges chain, and several comparison columns
        carry a tuple forward; a FULL upsert on one column is decided a batch at a time."""
        return self.merger is not None or not self.comparison.single

    @property
    def tracked_columns(self) -> frozenset[str]:
        """Columns whose missing values the consuming path must see (``$null$`` flags)."""
        columns = set(self.keys.columns)
        if self.comparison is not None:
            columns |= set(self.comparison.columns)
        return frozenset(columns)

    @property
    def out_of_order_column(self) -> str | None:
        return self.config.out_of_order_record_column if self.config else None

    @property
    def drop_out_of_order(self) -> bool:
        return bool(self.config and self.config.drop_out_of_order_record)
