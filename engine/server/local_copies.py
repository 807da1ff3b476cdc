"""A server's local segment copies: ``<data dir>/<table>/<segment>``, built only from names
that passed their checks (they come from ZooKeeper), and removed when the server no longer
hosts them. Interrupted downloads (``.staging-*``) and consuming segments' build directories
(``.consuming-<segment>``, ``engine.server.realtime``) live beside them."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Collection
from pathlib import Path

from engine.common.names import InvalidNameError, child_path

log = logging.getLogger(__name__)


class LocalCopies:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)

    def path(self, resource: str, name: str) -> Path:
        """Where ``name`` of ``resource`` lives; InvalidNameError for a name that cannot be a
        path component here."""
        return child_path(self.data_dir, resource, name)

    def refusal(self, resource: str, name: str) -> InvalidNameError | None:
        """Why ``name`` of ``resource`` can have no local copy (None when it can)."""
        try:
            self.path(resource, name)
        except InvalidNameError as exc:
            return exc
        return None

    def remove(self, resource: str, name: str) -> None:
        try:
            path = self.path(resource, name)
        except InvalidNameError:
            return  # a refused name never had a local copy
        shutil.rmtree(path, ignore_errors=True)

    def remove_stale(self, kept: Callable[[str], Collection[str]]) -> list[Path]:
        """Delete the directories in each table folder whose segment is not in
        ``kept(table folder name)`` (hosted or draining here), and interrupted downloads;
        returns what was removed."""
        removed = []
        if not self.data_dir.is_dir():
            return removed
        for table_dir in self.data_dir.iterdir():
            if not table_dir.is_dir():
                continue
            keep = kept(table_dir.name)
            for entry in table_dir.iterdir():
                # a consuming segment's build directory belongs to it
                owner = entry.name.removeprefix(".consuming-")
                if entry.is_dir() and entry.name not in keep and owner not in keep:
                    shutil.rmtree(entry, ignore_errors=True)
                    removed.append(entry)
        if removed:
            log.info("removed %d local segment copies no longer assigned here", len(removed))
        return removed
