"""Fixtures for engine tests: small schemas/configs built in code."""

from __future__ import annotations

import pytest

from engine.spi import Schema, TableConfig


def make_schema(dimensions=(), metrics=(), datetimes=(), name: str = "t") -> Schema:
    return Schema.from_json(
        {
            "schemaName": name,
            "dimensionFieldSpecs": list(dimensions),
            "metricFieldSpecs": list(metrics),
            "dateTimeFieldSpecs": list(datetimes),
        }
    )


def make_table_config(schema: Schema | None = None, **sections) -> TableConfig:
    raw = {"tableName": sections.pop("tableName", "t"), "tableType": "OFFLINE", **sections}
    return TableConfig.from_json(raw, schema)


@pytest.fixture
def airline_dir(pinot_examples):
    return pinot_examples / "batch" / "airlineStats"
