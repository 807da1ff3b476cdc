"""The credentials a minion's calls to the controller carry, from Pinot's minion keys:
``task.auth.token`` for the task APIs (lineage, metadata, uploads, deletes) and
``segment.fetcher.auth.token`` (or ``pinot.minion.segment.fetcher.auth.token``) for segment
downloads (``engine.runtime.service_auth``)."""

from __future__ import annotations

from engine.runtime.properties import process_properties
from engine.runtime.service_auth import MINION_FETCHER, MINION_TASK, auth_headers


def task_headers() -> dict[str, str]:
    return auth_headers(process_properties(), MINION_TASK)


def task_token() -> str | None:
    """The ``Authorization`` value of ``task_headers`` (what the ingestion job's
    ``authToken`` takes), or None."""
    return task_headers().get("Authorization")


def fetcher_headers() -> dict[str, str]:
    properties = process_properties()
    return auth_headers(properties, MINION_FETCHER) or auth_headers(
        properties, f"pinot.minion.{MINION_FETCHER}"
    )
