"""The query options the multi-stage engine reads, with Pinot's defaults
(``CommonConstants.Broker.Request.QueryOptionKey``). Keys match case-insensitively; the
join, window and group hints (``joinOptions(max_rows_in_join='10')``) override them."""

from __future__ import annotations

import dataclasses
import os

from engine.query.errors import QueryValidationError

DEFAULT_MAX_ROWS_IN_JOIN = 1 << 20
DEFAULT_MAX_ROWS_IN_WINDOW = 1 << 20
DEFAULT_NUM_GROUPS_LIMIT = 100_000
DEFAULT_TIMEOUT_MS = 10_000
MAX_STAGE_PARALLELISM = 64  # each worker is a thread on its server
# DataFusion's memory pool per stage worker: a join, sort or aggregation past it fails the
# query (245) and the server stays up (SPRIG_MSE_MEMORY_BYTES)
DEFAULT_MEMORY_BYTES = int(os.environ.get("SPRIG_MSE_MEMORY_BYTES", str(1 << 30)))


def option(options: dict[str, str], key: str, default: str | None = None) -> str | None:
    lowered = key.lower()
    for k, v in options.items():
        if k.lower() == lowered:
            return str(v)
    return default


def flag(options: dict[str, str], key: str, default: bool = False) -> bool:
    value = option(options, key)
    return default if value is None else value.strip().lower() == "true"


def number(options: dict[str, str], key: str, default: int) -> int:
    value = option(options, key)
    if value is None:
        return default
    try:
        return int(float(value))
    except ValueError as exc:
        raise QueryValidationError(f"Query option {key}={value!r} is not a number") from exc


def stage_parallelism(options: dict[str, str]) -> int:
    """Pinot's ``stageParallelism``: workers per server in the stages a hash shuffle feeds."""
    value = number(options, "stageParallelism", 1)
    if not 1 <= value <= MAX_STAGE_PARALLELISM:
        raise QueryValidationError(
            f"Query option stageParallelism={value} is out of range: it must be between 1 and "
            f"{MAX_STAGE_PARALLELISM} (workers per server)"
        )
    return value


@dataclasses.dataclass(frozen=True)
class Limits:
    max_rows_in_join: int = DEFAULT_MAX_ROWS_IN_JOIN
    join_overflow: str = "THROW"
    max_rows_in_window: int = DEFAULT_MAX_ROWS_IN_WINDOW
    window_overflow: str = "THROW"
    num_groups: int = DEFAULT_NUM_GROUPS_LIMIT
    error_on_num_groups: bool = False
    memory_bytes: int = DEFAULT_MEMORY_BYTES
    threads: int = 2  # DataFusion's partitions per worker: the cores over the workers
    parallelism: int = 1  # stageParallelism: workers per server of a hash-shuffled stage

    @classmethod
    def of(cls, options: dict[str, str], hints: dict[str, dict[str, str]] | None = None) -> Limits:
        hints = hints or {}
        join = hints.get("joinOptions", {})
        window = hints.get("windowOptions", {})
        agg = hints.get("aggOptions", {})

        def pick(hint: dict, hint_key: str, key: str, default):
            if hint_key in hint:
                return hint[hint_key]
            return option(options, key, default)

        parallelism = stage_parallelism(options)
        return cls(
            int(pick(join, "max_rows_in_join", "maxRowsInJoin", DEFAULT_MAX_ROWS_IN_JOIN)),
            str(pick(join, "join_overflow_mode", "joinOverflowMode", "THROW")).upper(),
            int(pick(window, "max_rows_in_window", "maxRowsInWindow", DEFAULT_MAX_ROWS_IN_WINDOW)),
            str(pick(window, "window_overflow_mode", "windowOverflowMode", "THROW")).upper(),
            int(pick(agg, "num_groups_limit", "numGroupsLimit", DEFAULT_NUM_GROUPS_LIMIT)),
            str(pick(agg, "error_on_num_groups_limit", "errorOnNumGroupsLimit", "false")).lower()
            == "true",
            number(options, "maxMemoryBytesPerWorker", DEFAULT_MEMORY_BYTES),
            max(1, (os.cpu_count() or 1) // parallelism),
            parallelism,
        )

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Limits:
        return cls(**data)
