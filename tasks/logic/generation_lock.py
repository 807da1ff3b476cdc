"""One generation at a time per table and task type, across every controller: a ZooKeeper lock
(kazoo's Lock recipe) at ``MINION_TASK_LOCKS/<tableNameWithType>/<TaskType>``. A controller
that dies while holding it loses its ephemeral node with its session, so the lock frees
itself; ``DELETE /tasks/lock/forceRelease`` frees it by hand."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from kazoo.recipe.lock import Lock

from engine.clusterstate import ClusterStore
from tasks.errors import GenerationError


def lock_root(store: ClusterStore, table_name: str) -> str:
    return f"{store.paths.property_store}/MINION_TASK_LOCKS/{table_name}"


@contextlib.contextmanager
def generation_lock(store: ClusterStore, table_name: str, task_type: str) -> Iterator[None]:
    """Hold the lock for the block; GenerationError at once if another generation holds it."""
    lock = Lock(store.client, f"{lock_root(store, table_name)}/{task_type}")
    if not lock.acquire(blocking=False):
        raise GenerationError(
            f"another {task_type} generation for table {table_name} is in progress; retry later"
            " (or DELETE /tasks/lock/forceRelease?tableNameWithType=" + table_name + ")"
        )
    try:
        yield
    finally:
        lock.release()


def force_release(store: ClusterStore, table_name: str) -> bool:
    """Delete every generation lock of the table; False if none was held."""
    return store.delete(lock_root(store, table_name), recursive=True)
