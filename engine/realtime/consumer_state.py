"""What a partition's consuming loop shows the rest of the server: its state in the
completion protocol and its counters (for metrics and consumingSegmentsInfo)."""

from __future__ import annotations

import dataclasses
import enum
from collections import deque


class ConsumerState(enum.StrEnum):
    INITIAL_CONSUMING = "INITIAL_CONSUMING"
    CATCHING_UP = "CATCHING_UP"
    HOLDING = "HOLDING"
    COMMITTING = "COMMITTING"
    RETAINING = "RETAINING"
    COMMITTED = "COMMITTED"
    RETAINED = "RETAINED"
    DISCARDED = "DISCARDED"
    ERROR = "ERROR"


DONE_STATES = frozenset(
    {ConsumerState.COMMITTED, ConsumerState.RETAINED, ConsumerState.DISCARDED, ConsumerState.ERROR}
)


@dataclasses.dataclass
class ConsumingStats:
    """Counters of one consuming segment (for metrics and consumingSegmentsInfo).
    ``rows_malformed`` counts messages that could not be decoded or coerced;
    ``last_message_time_ms`` is the Kafka timestamp of the newest message consumed."""

    messages: int = 0
    rows_indexed: int = 0
    rows_filtered: int = 0
    rows_malformed: int = 0
    offset_resets: int = 0
    transient_errors: int = 0
    last_message_time_ms: int | None = None
    last_consumed_at_ms: int | None = None
    recent_errors: deque = dataclasses.field(default_factory=lambda: deque(maxlen=20))
