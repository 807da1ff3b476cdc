"""Cooperative stopping of a query's work: cancellation and timeouts by one mechanism.

A ``WorkToken`` carries a query's deadline and a cancelled flag. The threads that work for
the query hold it as their current token (``working_on``), and the long loops of the engine
call ``checkpoint()``: between segments, between a segment's stages, and once per chunk of a
column they decompress. A cancel (``WorkToken.cancel``) or a passed deadline then stops the
work at the next checkpoint, in every thread of the query, by raising the error the token was
made with. A check is an attribute read and a clock read, so the hot path pays nothing that
shows.
"""

from __future__ import annotations

import threading
import time

_current = threading.local()


class WorkToken:
    """``deadline``: ``time.monotonic()`` seconds (None: none). The layer that owns the query
    subclasses it to choose the exceptions a checkpoint raises after the deadline or a
    cancel (``timeout_error``, ``cancel_error``)."""

    __slots__ = ("cancelled_at", "deadline")

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self.cancelled_at: float | None = None  # monotonic seconds of the cancel

    @property
    def cancelled(self) -> bool:
        return self.cancelled_at is not None

    def cancel(self) -> None:
        """Stop the work at its next checkpoint (idempotent; any thread)."""
        if self.cancelled_at is None:
            self.cancelled_at = time.monotonic()

    def check(self) -> None:
        """Raise the cancel error once cancelled, the timeout error once past the deadline."""
        if self.cancelled_at is not None:
            raise self.cancel_error()
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise self.timeout_error()

    def timeout_error(self) -> Exception:
        return TimeoutError("the work ran out of time")

    def cancel_error(self) -> Exception:
        return InterruptedError("the work was cancelled")


def checkpoint() -> None:
    """Stop here if the current thread's query was cancelled or ran out of time."""
    token = getattr(_current, "token", None)
    if token is not None:
        token.check()


def current_token() -> WorkToken | None:
    return getattr(_current, "token", None)


class working_on:
    """``with working_on(token):`` makes ``token`` the current thread's token for the block
    (pool threads too). A class rather than a generator: it runs per segment."""

    __slots__ = ("_previous", "_token")

    def __init__(self, token: WorkToken | None) -> None:
        self._token = token

    def __enter__(self) -> None:
        self._previous = getattr(_current, "token", None)
        _current.token = self._token

    def __exit__(self, *_exc) -> None:
        _current.token = self._previous
