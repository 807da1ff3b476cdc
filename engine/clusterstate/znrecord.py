"""Helix's ZNRecord: the JSON document stored in every cluster-state znode.

The wire form is ``{"id", "simpleFields", "mapFields", "listFields"}`` with string values only,
so any Helix/Pinot tool that reads these znodes understands them.
"""

from __future__ import annotations

import dataclasses

import orjson

from engine.clusterstate.errors import ClusterStateError


@dataclasses.dataclass
class ZNRecord:
    id: str
    simple_fields: dict[str, str] = dataclasses.field(default_factory=dict)
    map_fields: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    list_fields: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "simpleFields": dict(self.simple_fields),
            "mapFields": {k: dict(v) for k, v in self.map_fields.items()},
            "listFields": {k: list(v) for k, v in self.list_fields.items()},
        }

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.to_json(), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: dict, *, where: str = "znode") -> ZNRecord:
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            raise ClusterStateError(f"{where}: not a ZNRecord (needs a string 'id')")
        simple = data.get("simpleFields") or {}
        maps = data.get("mapFields") or {}
        lists = data.get("listFields") or {}
        if not (isinstance(simple, dict) and isinstance(maps, dict) and isinstance(lists, dict)):
            raise ClusterStateError(f"{where}: simpleFields/mapFields/listFields must be objects")
        return cls(
            id=data["id"],
            simple_fields={str(k): _text(v) for k, v in simple.items()},
            map_fields={
                str(k): {str(i): _text(s) for i, s in (v or {}).items()} for k, v in maps.items()
            },
            list_fields={str(k): [_text(i) for i in (v or [])] for k, v in lists.items()},
        )

    @classmethod
    def from_bytes(cls, raw: bytes, *, where: str = "znode") -> ZNRecord:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ClusterStateError(f"{where}: not valid JSON ({exc})") from exc
        return cls.from_json(data, where=where)


def _text(value: object) -> str:
    # Helix stores strings only; tolerate numbers/booleans written by hand through /zk/put
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def int_field(value: str | None, default):
    """A simple field read as an int: ``default`` when it is absent, empty or not a number."""
    try:
        return int(value) if value not in (None, "") else default
    except ValueError:
        return default
