"""Pinot's JSON functions over JSON text (or already-decoded documents, as ingestion reads
nested Avro/Parquet/JSON fields): ``jsonFormat``, the ``jsonPath*`` family and
JSONEXTRACTSCALAR, with the JSONPath subset Pinot users write in practice: ``$.a.b``,
``$.a[0].b``, ``$['a']``."""

from __future__ import annotations

import functools
import re

import numpy as np
import orjson

from engine.functions.registry import FunctionArgumentError, FunctionValueError, register

_STEP = re.compile(r"\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\['([^']*)'\]|\[\"([^\"]*)\"\]")
_TYPES = {"INT": np.int32, "LONG": np.int64, "FLOAT": np.float32, "DOUBLE": np.float64,
          "STRING": object, "BOOLEAN": bool}  # fmt: skip
_MISSING = object()


@functools.lru_cache(maxsize=256)
def parse_path(path: str) -> tuple:
    """``$.a[0]['b']`` -> ("a", 0, "b"); FunctionArgumentError for anything else."""
    if not path.startswith("$"):
        raise FunctionArgumentError(f"JSON path must start with '$': {path!r}")
    steps, pos = [], 1
    while pos < len(path):
        match = _STEP.match(path, pos)
        if not match:
            raise FunctionArgumentError(f"Unsupported JSON path {path!r} at position {pos}")
        name, index, quoted, dquoted = match.groups()
        steps.append(int(index) if index is not None else (name or quoted or dquoted))
        pos = match.end()
    return tuple(steps)


def _extract(doc, steps: tuple):
    """The node at ``steps`` of a document (JSON text or decoded), or _MISSING."""
    if isinstance(doc, str | bytes):
        try:
            doc = orjson.loads(doc)
        except orjson.JSONDecodeError:
            return _MISSING
    for step in steps:
        if (isinstance(step, int) and isinstance(doc, list) and step < len(doc)) or (
            isinstance(step, str) and isinstance(doc, dict) and step in doc
        ):
            doc = doc[step]
        else:
            return _MISSING
    return _MISSING if doc is None else doc


def _each(values, fn):
    """``fn`` per document; a scalar document gives a scalar."""
    if np.ndim(values) == 0:
        return fn(values)
    return [fn(doc) for doc in values]


def _dumps(value) -> str:
    return orjson.dumps(value, default=str).decode()


@register("jsonFormat", 1, 1, "STRING")
def json_format(values):
    """A document as compact JSON text; text is kept as it is."""
    out = _each(values, lambda v: v if isinstance(v, str) else _dumps(v))
    return np.array(out, dtype=object) if isinstance(out, list) else out


@register("jsonPathString", 2, 3, "STRING")
def json_path_string(values, path, default=None):
    """The value at ``path`` as text (non-text values as JSON); ``default`` (null when not
    given) where the path is absent."""
    steps = parse_path(str(path))

    def one(doc):
        found = _extract(doc, steps)
        return default if found is _MISSING else found if isinstance(found, str) else _dumps(found)

    out = _each(values, one)
    return np.array(out, dtype=object) if isinstance(out, list) else out


def _json_number(kind, missing):
    def impl(values, path, default=missing):
        steps = parse_path(str(path))

        def one(doc):
            found = _extract(doc, steps)
            try:
                return default if found is _MISSING else kind(found)
            except (TypeError, ValueError):
                return default

        out = _each(values, one)
        return (
            np.array(out, dtype=np.int64 if kind is int else np.float64)
            if isinstance(out, list)
            else out
        )

    return impl


register("jsonPathLong", 2, 3, "LONG")(_json_number(int, -(2**63)))  # Long.MIN_VALUE
register("jsonPathDouble", 2, 3, "DOUBLE")(_json_number(float, float("nan")))


@register("jsonPathArray", 2, 2, "STRING_ARRAY")
def json_path_array(values, path):
    """The list at ``path`` (a single value becomes a one-element list); null if absent."""
    steps = parse_path(str(path))

    def one(doc):
        found = _extract(doc, steps)
        return None if found is _MISSING else found if isinstance(found, list) else [found]

    out = _each(values, one)
    if not isinstance(out, list):
        return out
    result = np.empty(len(out), dtype=object)
    result[:] = out
    return result


def _json_type(arg_types: list[str]) -> str:
    return "UNKNOWN"  # the planner reads the result type literal


@register("jsonextractscalar", 3, 4, _json_type)
def json_extract_scalar(values, path, result_type, default=None):
    """The scalar at ``path`` of each JSON document, converted to ``result_type``; documents
    without it take ``default`` (an error when no default is given, as in Pinot)."""
    target = str(result_type).upper()
    if target not in _TYPES:
        raise FunctionArgumentError(f"JSONEXTRACTSCALAR: unknown result type {result_type!r}")
    steps = parse_path(str(path))
    scalar = np.ndim(values) == 0
    out = []
    for doc in [values] if scalar else values:
        found = _extract(doc, steps)
        if found is _MISSING or isinstance(found, dict | list):
            if default is None:
                raise FunctionValueError(
                    f"JSONEXTRACTSCALAR: no scalar at {path} in {str(doc)[:80]!r}"
                )
            found = default
        out.append(found)
    try:
        if target == "STRING":
            result = np.array([v if isinstance(v, str) else _dumps(v) for v in out], dtype=object)
        elif target == "BOOLEAN":
            result = np.array(
                [v if isinstance(v, bool) else str(v).lower() == "true" for v in out], dtype=bool
            )
        else:
            result = np.array(
                [float(v) if target in ("FLOAT", "DOUBLE") else int(float(v)) for v in out],
                dtype=_TYPES[target],
            )
    except (TypeError, ValueError) as err:
        raise FunctionValueError(
            f"JSONEXTRACTSCALAR: value at {path} is not {target}: {err}"
        ) from err
    return result[0] if scalar else result


@register("jsonExtractKey", 2, 2, "STRING_ARRAY")
def json_extract_key(values, path):
    """The paths (as JsonPath writes them: ``$['a'][0]``) that ``path`` selects in each
    document: with a trailing ``.*`` or ``[*]``, every key (or index) of the node before it;
    else ``path`` itself when present. An unreadable document selects nothing."""
    text = str(path)
    wildcard = text.endswith((".*", "[*]"))
    steps = parse_path(text.removesuffix("[*]").removesuffix(".*") or "$")
    prefix = "$" + "".join(f"[{s}]" if isinstance(s, int) else f"['{s}']" for s in steps)

    def one(doc):
        found = _extract(doc, steps)
        if found is _MISSING:
            return []
        if not wildcard:
            return [prefix]
        if isinstance(found, dict):
            return [f"{prefix}['{key}']" for key in found]
        return [f"{prefix}[{i}]" for i in range(len(found))] if isinstance(found, list) else []

    if np.ndim(values) == 0:
        return one(values)
    out = [one(doc) for doc in values]
    result = np.empty(len(out), dtype=object)
    result[:] = out
    return result
