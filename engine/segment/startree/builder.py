"""Builds star-trees."""

from __future__ import annotations


def build_star_trees(columns, schema, table_config, seg_dir, num_docs) -> list[dict]:
    """Build the table's star-trees; returns their metadata entries."""
    return []
