"""Fetching the table's schema and table config named by `tableSpec`: over HTTP from the
controller (Pinot's `GET /tables/{t}/schema`, `GET /schemas/{name}`, `GET /tables/{t}`), or from
a local JSON file. The controller wraps table configs as `{"OFFLINE": {...}, "REALTIME": {...}}`;
the wrapper is removed here, OFFLINE first, as Pinot's job does."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import orjson
import requests

from spark_jobs.ingestion.errors import TableSourceError
from spark_jobs.ingestion.files import local_path

HTTP_TIMEOUT_SECONDS = 30


def default_schema_uri(controller_uri: str, table_name: str) -> str:
    return f"{controller_uri.rstrip('/')}/tables/{table_name}/schema"


def default_table_config_uri(controller_uri: str, table_name: str) -> str:
    return f"{controller_uri.rstrip('/')}/tables/{table_name}"


def fetch_schema(uri: str, root: Path | None = None, auth_token: str | None = None) -> dict:
    """The schema JSON at `uri`, checked by the engine's schema parser."""
    document = _fetch_json(uri, "schema", root, auth_token)
    from engine.common.errors import EngineError
    from engine.spi import Schema

    try:
        Schema.from_json(document)
    except EngineError as exc:
        raise TableSourceError(f"the schema at {uri} is not a valid Pinot schema: {exc}") from exc
    return document


def fetch_table_config(
    uri: str, table_name: str, root: Path | None = None, auth_token: str | None = None
) -> dict:
    """The table config JSON at `uri` (unwrapped), for table `table_name`."""
    document = _fetch_json(uri, "table config", root, auth_token)
    for table_type in ("OFFLINE", "REALTIME"):
        if isinstance(document.get(table_type), dict):
            document = document[table_type]
            break
    if not document:
        raise TableSourceError(
            f"table {table_name!r} does not exist (GET {uri} returned no config)"
        )
    if "tableName" not in document:
        raise TableSourceError(f"the table config at {uri} has no 'tableName'")
    return document


def check_table_config(table_config: dict, schema: dict, table_name: str) -> None:
    """Raise TableSourceError when the engine rejects the table config for this schema."""
    from engine.common.errors import EngineError
    from engine.spi import Schema, TableConfig

    try:
        TableConfig.from_json(table_config, schema=Schema.from_json(schema))
    except EngineError as exc:
        raise TableSourceError(f"the table config of {table_name!r} is not valid: {exc}") from exc


def _fetch_json(uri: str, what: str, root: Path | None, auth_token: str | None) -> dict[str, Any]:
    scheme = urlparse(uri).scheme.lower()
    if scheme in ("http", "https"):
        body = _http_get(uri, what, auth_token)
    else:
        path = local_path(uri, root, what=f"{what} URI")
        try:
            body = path.read_bytes()
        except OSError as exc:
            raise TableSourceError(
                f"cannot read the {what} file {str(path)!r}: {exc.strerror}"
            ) from exc
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise TableSourceError(f"the {what} at {uri} is not valid JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise TableSourceError(f"the {what} at {uri} must be a JSON object")
    return document


def _http_get(uri: str, what: str, auth_token: str | None) -> bytes:
    headers = {"Authorization": auth_token} if auth_token else {}
    try:
        response = requests.get(uri, headers=headers, timeout=HTTP_TIMEOUT_SECONDS)
    except requests.RequestException as exc:
        raise TableSourceError(f"cannot fetch the {what} from {uri}: {_reason(exc)}") from exc
    if response.status_code == 404:
        raise TableSourceError(
            f"the controller has no {what} at {uri} (404: {controller_message(response)})"
        )
    if response.status_code >= 400:
        raise TableSourceError(
            f"fetching the {what} from {uri} failed with HTTP {response.status_code}: "
            f"{controller_message(response)}"
        )
    return response.content


def controller_message(response: requests.Response) -> str:
    """The error text of a controller response: Pinot's `{"code", "error"}` body, else text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("error", "message", "detail", "status"):
            if body.get(key):
                return str(body[key])
    text = " ".join(response.text.split())
    return text[:300] if text else response.reason or "no message"


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.ConnectionError):
        return "connection refused or host unreachable"
    if isinstance(exc, requests.Timeout):
        return f"no answer within {HTTP_TIMEOUT_SECONDS} s"
    return str(exc)
