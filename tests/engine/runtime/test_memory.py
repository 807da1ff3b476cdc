"""The allocator tuning every server and broker process applies at start."""

from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import resource, sys
from engine.runtime.memory import tune_allocator
tuned = tune_allocator()
import numpy as np
values = np.arange(5_000_000)
values.astype(np.float64)  # first query: the heap grows and its pages are faulted in once
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(3):
    values.astype(np.float64)  # later queries reuse them
print(tuned, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _probe(**env) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return out[0], int(out[1])


def test_freed_arrays_are_reused_without_page_faults():
    tuned, faults = _probe()
    assert tuned == "True"
    # three 40 MB arrays: ~30,000 4-KiB faults (or ~170 huge-page faults) if each came
    # from a fresh mmap; with the heap kept, none (a few allowed for the interpreter's own)
    assert faults < 20


def test_the_tuning_can_be_turned_off():
    tuned, _ = _probe(SPRIG_MALLOC_TUNE="0")
    assert tuned == "False"
