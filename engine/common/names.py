"""Names that become file and znode path components: segment and table names.

Every process builds paths from them (``<data dir>/<table>/<segment>``, the deep store's
``<root>/<rawTable>/<segment>``, ZooKeeper's ``.../SEGMENTS/<table>/<segment>``), and they
come from callers: an uploaded segment's metadata, a request's path, a znode someone wrote.
So a name is checked where it enters and again where a path is built from it, and a path is
only ever built from names that passed (``child_path``).
"""

from __future__ import annotations

import os
from pathlib import Path

from engine.common.errors import EngineError

# Pinot's SegmentNameUtils refuses these in segment names; '/' and '\' also separate paths
_PINOT_INVALID = frozenset('\\/:*?"<>|')
# a file name longer than this is refused by the filesystems we write to (ext4, xfs, s3 keys
# are longer, but a local copy on a server must fit)
MAX_NAME_BYTES = 255


class InvalidNameError(EngineError, ValueError):
    """A segment or table name that cannot be a path component. ``kind`` is "segment" or
    "table"; the message says which rule it broke."""

    def __init__(self, kind: str, name: object, reason: str):
        self.kind = kind
        self.name = name
        self.reason = reason
        super().__init__(f"invalid {kind} name {name!r}: {reason}")


def _problem(name: object) -> str | None:
    """Why ``name`` cannot be one path component (None when it can)."""
    if not isinstance(name, str) or not name:
        return "it must be a non-empty string"
    if name in (".", "..") or ".." in name:
        return "it must not contain '..'"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "it must not contain control characters"
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"it must be at most {MAX_NAME_BYTES} bytes"
    return None


def check_segment_name(name: object) -> str:
    """``name`` if it is a valid segment name: Pinot's rule (none of ``\\ / : * ? " < > |``),
    no ``..``, no control characters, at most 255 bytes; InvalidNameError otherwise."""
    problem = _problem(name)
    if problem is None and _PINOT_INVALID & set(name):
        bad = "".join(sorted(_PINOT_INVALID & set(name)))
        problem = f'it must not contain any of \\ / : * ? " < > | (found {bad!r})'
    if problem:
        raise InvalidNameError("segment", name, problem)
    return name


def check_table_name(name: object, kind: str = "table") -> str:
    """``name`` (raw or with its type suffix) if it can name a table's folders and znodes: no
    ``/`` or ``\\``, no whitespace or control characters, at most one ``.`` (Pinot's
    ``database.table``) with a non-empty name on each side of it; InvalidNameError otherwise.
    Schema names follow the same rule (``kind="schema"``)."""
    problem = _problem(name)
    if problem is None:
        if "/" in name or "\\" in name:
            problem = "it must not contain '/' or '\\'"
        elif any(c.isspace() for c in name):
            problem = "it must not contain whitespace"
        elif name.count(".") > 1:
            problem = "it must contain at most one '.' (database.table)"
        elif not all(name.split(".")):
            problem = "'.' must separate a database and a table name, both non-empty"
    if problem:
        raise InvalidNameError(kind, name, problem)
    return name


def is_valid_segment_name(name: object) -> bool:
    try:
        check_segment_name(name)
    except InvalidNameError:
        return False
    return True


def child_path(root: Path, table: str, segment: str | None = None) -> Path:
    """``root/<table>[/<segment>]`` once both names passed their checks, and checked again to
    lie inside ``root`` after normalisation: the one way a process turns names from a request
    or from ZooKeeper into a local path. InvalidNameError otherwise."""
    parts = [check_table_name(table)]
    if segment is not None:
        parts.append(check_segment_name(segment))
    root = Path(root)
    path = root.joinpath(*parts)
    base = os.path.normpath(os.path.abspath(root))
    if os.path.commonpath([base, os.path.normpath(os.path.abspath(path))]) != base:
        raise InvalidNameError("segment", segment, f"its path leaves {root}")  # unreachable
    return path
