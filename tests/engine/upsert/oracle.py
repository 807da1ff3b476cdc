"""The reference model of UPSERT_AND_DEDUP.md §8, written straight from the semantics: a
Python dict per partition fed in offset order. Rows are dicts; ``None`` is null."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class Entry:
    cmp: object
    row: dict
    deleted: bool


def is_delete(value) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.lower() == "true" or value == "1"
    return value == 1


class UpsertOracle:
    """One partition. ``merge(prev_row, row) -> row`` for partial upserts; ``starts`` are the
    offsets at which a segment starts (TTL purges run there)."""

    def __init__(self, key, cmp, *, delete_column=None, merge=None, drop_out_of_order=False,
                 metadata_ttl=0, deleted_ttl=0, ooo_column=None):  # fmt: skip
        self.key, self.cmp = key, cmp
        self.delete_column = delete_column
        self.merge = merge
        self.drop = drop_out_of_order
        self.ttl, self.deleted_ttl = metadata_ttl, deleted_ttl
        self.ooo_column = ooo_column
        self.state: dict = {}
        self.stored: list[dict] = []
        self.orphans: list[Entry] = []
        self.watermark = float("-inf")
        self.deleted_purged = 0  # keys deletedKeysTTL removed

    def purge(self) -> None:
        for k, e in list(self.state.items()):
            if self.ttl and e.cmp < self.watermark - self.ttl:
                self.orphans.append(e)
                del self.state[k]
            elif self.deleted_ttl and e.deleted and e.cmp < self.watermark - self.deleted_ttl:
                del self.state[k]
                self.deleted_purged += 1

    def add(self, row: dict) -> None:
        row = dict(row)
        key, value = self.key(row), self.cmp(row)
        deleted = is_delete(row.get(self.delete_column)) if self.delete_column else False
        if self.ttl or self.deleted_ttl:
            self.watermark = max(self.watermark, float(value))
        current = self.state.get(key)
        wins = current is None or value >= current.cmp
        if self.merge and current and not deleted and wins and not current.deleted:
            row = self.merge(current.row, row)
        if self.ooo_column:
            row[self.ooo_column] = 0 if wins else 1
        if wins:
            self.state[key] = Entry(value, row, deleted)
            self.stored.append(row)
        elif not self.drop:
            self.stored.append(row)

    @property
    def live(self) -> list[Entry]:
        return list(self.state.values()) + self.orphans

    def default(self) -> list[dict]:
        return [e.row for e in self.live if not e.deleted]

    def skip_upsert(self) -> list[dict]:
        return self.stored


class DedupOracle:
    def __init__(self, key, time, ttl=0):
        self.key, self.time, self.ttl = key, time, ttl
        self.seen: dict = {}
        self.kept: list[dict] = []
        self.watermark = 0.0

    def add(self, row: dict) -> None:
        t = self.time(row)
        self.watermark = max(self.watermark, t)
        key = self.key(row)
        if key not in self.seen or (self.ttl and self.seen[key] < self.watermark - self.ttl):
            self.seen[key] = t
            self.kept.append(row)
