"""The query engine's settings, read once when a process starts (``QuerySettings.from_env``)
and handed to the ``QueryEngine`` it owns; nothing reads them again per query."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

from engine.common.errors import ConfigError

DEFAULT_DECODED_CACHE_BYTES = 4 << 30


@dataclasses.dataclass(frozen=True)
class QuerySettings:
    #: threads that run one query's segments in parallel (1: never in parallel)
    threads: int = 2
    #: a query's segments go to those threads only when its recent runs cost at least this
    #: much CPU per segment, in ms: below it the hand-offs and GIL contention cost more than
    #: the parallelism saves (measured here: two 0.14 ms segments take 0.29 ms one after the
    #: other and 0.56 ms in the pool)
    parallel_min_segment_ms: float = 2.0
    #: cap of the decoded-column cache, in bytes
    decoded_cache_bytes: int = DEFAULT_DECODED_CACHE_BYTES
    #: compiled plans kept (see ``engine.query.plan_cache``)
    plan_cache_size: int = 1024

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ConfigError("threads", f"need at least 1 query thread, got {self.threads}")
        if self.parallel_min_segment_ms < 0:
            raise ConfigError("parallel_min_segment_ms", "must not be negative")
        if self.decoded_cache_bytes < 0:
            raise ConfigError("decoded_cache_bytes", "must not be negative")
        if self.plan_cache_size < 1:
            raise ConfigError("plan_cache_size", "must be at least 1")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> QuerySettings:
        """From ``SPRIG_QUERY_THREADS``, ``SPRIG_PARALLEL_MIN_SEGMENT_MS`` and
        ``SPRIG_QUERY_CACHE_BYTES``; an unset or empty variable keeps the default. Raises
        ConfigError naming the variable when a value is not a valid number."""
        env = os.environ if environ is None else environ
        fields = {
            "threads": ("SPRIG_QUERY_THREADS", int),
            "parallel_min_segment_ms": ("SPRIG_PARALLEL_MIN_SEGMENT_MS", float),
            "decoded_cache_bytes": ("SPRIG_QUERY_CACHE_BYTES", int),
        }
        values = {}
        for field, (name, kind) in fields.items():
            raw = (env.get(name) or "").strip()
            if not raw:
                continue
            try:
                values[field] = kind(raw)
            except ValueError:
                raise ConfigError(name, f"expected a {kind.__name__}, got {raw!r}") from None
        try:
            return cls(**values)
        except ConfigError as exc:
            name = fields[exc.field][0] if exc.field in fields else exc.field
            raise ConfigError(name, exc.message) from None
