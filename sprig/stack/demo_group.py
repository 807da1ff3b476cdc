"""The quickstart's demo consumer group, so the Kafka consumers page has a real group to show
without the user doing anything: `quickstart-demo` joins with subscribe() and reads
githubEvents, committing every few seconds. It alternates between keeping up and reading at a
fraction of the producer's rate, so its lag grows and shrinks: the lag history has a shape and
its Burrow status moves from OK to WARN and back."""

from __future__ import annotations

import itertools
import logging
import threading
import time

from confluent_kafka import Consumer, KafkaException

log = logging.getLogger(__name__)

GROUP = "quickstart-demo"
PHASE_S = 150  # each phase lasts long enough for the 30 s lag samples to show it
SLOW_SHARE = 0.4  # while behind, reads 40% of what the producer writes
COMMIT_EVERY_S = 5.0


class DemoGroup:
    """One member of GROUP on `topic`, on a daemon thread; `stop()` leaves the group."""

    def __init__(self, bootstrap: str, topic: str, rate_per_s: float) -> None:
        self.topic = topic
        self.rate_per_s = rate_per_s
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": GROUP, "client.id": GROUP,
            "enable.auto.commit": False, "auto.offset.reset": "latest", "log_level": 2,
        })  # fmt: skip
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=GROUP, daemon=True)

    def start(self) -> DemoGroup:
        self._consumer.subscribe([self.topic])
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        try:
            for behind in itertools.cycle((False, True)):
                if self._phase(behind) or self._stop.is_set():
                    break
        except KafkaException as exc:  # the demo is a side show: say why it ended, no more
            log.warning("the %s consumer group stopped: %s", GROUP, exc)
        finally:
            self._consumer.close()

    def _phase(self, behind: bool) -> bool:
        """One phase; True when stopped. Behind, it sleeps between single reads so it reads
        SLOW_SHARE of the producer's rate; otherwise it reads whatever is there."""
        pause = 1.0 / (self.rate_per_s * SLOW_SHARE) if behind else 0.0
        ends = time.monotonic() + PHASE_S
        committed_at = time.monotonic()
        while time.monotonic() < ends:
            message = self._consumer.poll(0.5)
            read = message is not None and message.error() is None
            if (read and pause and self._stop.wait(pause)) or self._stop.is_set():
                return True
            if time.monotonic() - committed_at >= COMMIT_EVERY_S:
                self._commit()
                committed_at = time.monotonic()
        return False

    def _commit(self) -> None:
        try:
            self._consumer.commit(asynchronous=False)
        except KafkaException as exc:  # nothing consumed since the last commit, or rebalancing
            log.debug("the %s commit was skipped: %s", GROUP, exc)
