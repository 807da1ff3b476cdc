"""Progress reporting for the job's two phases (building in Spark, pushing from the driver).

The job reports to a `ProgressSink`; the CLI passes one that draws a rich progress bar. Spark
build progress is read from Spark's status tracker (completed tasks of the job group), polled
from a side thread while the driver waits for the results.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

POLL_SECONDS = 0.5


class ProgressSink(Protocol):
    def start(self, description: str, total: int) -> None: ...

    def update(self, completed: int) -> None: ...

    def finish(self) -> None: ...


class NoProgress:
    """A sink that shows nothing (tests, library use)."""

    def start(self, description: str, total: int) -> None:
        pass

    def update(self, completed: int) -> None:
        pass

    def finish(self) -> None:
        pass


class RichProgress:
    """A rich progress bar on stderr, one task per phase."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self._progress = Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        )
        self._task: Any = None

    def start(self, description: str, total: int) -> None:
        if self._task is None:
            self._progress.start()
        self._task = self._progress.add_task(description, total=total)

    def update(self, completed: int) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=completed)

    def finish(self) -> None:
        if self._task is not None:
            self._progress.stop()
            self._task = None


@contextmanager
def spark_task_progress(
    spark: Any, sink: ProgressSink, description: str, total: int
) -> Iterator[None]:
    """Run the body's Spark jobs in a fresh job group and report their completed tasks to
    `sink` (out of `total`) until the body returns."""
    context = spark.sparkContext
    group = f"sprig-ingest-{uuid.uuid4().hex[:8]}"
    context.setJobGroup(group, description)
    sink.start(description, total)
    done = threading.Event()

    def poll() -> None:
        tracker = context.statusTracker()
        while not done.wait(POLL_SECONDS):
            sink.update(min(total, _completed_tasks(tracker, group)))

    poller = threading.Thread(target=poll, name="spark-progress", daemon=True)
    poller.start()
    try:
        yield
    finally:
        done.set()
        poller.join()
        sink.update(min(total, _completed_tasks(context.statusTracker(), group)))
        context.setLocalProperty("spark.jobGroup.id", None)


def _completed_tasks(tracker: Any, group: str) -> int:
    completed = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        for stage_id in job.stageIds if job else ():
            stage = tracker.getStageInfo(stage_id)
            completed += stage.numCompletedTasks if stage else 0
    return completed
