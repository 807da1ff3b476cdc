"""The tables the task manager schedules over, read through a provider.

The table configs are the cluster app's records, and the task framework stands below that
app, so it reads them only through the small interface below (the way PostHog's query engine
reaches the ORM). The cluster app registers its provider when Django starts
(``cluster.apps``); a table row is anything with ``name_with_type`` (``airlineStats_OFFLINE``)
and ``config`` (the table config JSON as given).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class TableRow(Protocol):
    @property
    def name_with_type(self) -> str: ...

    @property
    def config(self) -> dict: ...


# (table name or None) -> rows: every table for None, else the types of one table named raw
# or with its type; controller.errors.NotFound when it has none.
TableProvider = Callable[[str | None], list[TableRow]]

_provider: TableProvider | None = None


def provide_tables(provider: TableProvider) -> None:
    global _provider
    _provider = provider


def table_rows(table_name: str | None = None) -> list[TableRow]:
    """Every table (``table_name`` None), or both types of a raw name, or the one type a name
    with its suffix names; NotFound naming the table when there is none."""
    if _provider is None:
        raise RuntimeError("no table provider: the cluster app registers one when Django starts")
    return _provider(table_name)
