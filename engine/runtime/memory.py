"""Keep freed query memory in the process, so a query's row-sized arrays reuse pages that are
already mapped instead of faulting fresh ones in.

A group-by over a 5M-row segment makes several 40 MB temporaries (codes cast to intp,
values cast to float64). glibc serves each with its own ``mmap`` and hands it back with
``munmap`` on free, and numpy asks for transparent huge pages on it; the next query then
faults 40 MB in again. On this project's VMs a fault costs more than the arithmetic: a cast
of 5M values took 3.8 ms with ~570 faults and 1.7 ms with none, and a first touch of pages
the guest never had took 80 ms. With no ``mmap`` for large blocks, a high trim threshold and
one arena (thread arenas give their heaps back on free), the second query of a shape runs
with no page faults at all. The price is that the process keeps its peak heap (up to the
trim threshold above what is in use) instead of returning it at once.

Linux with glibc only; elsewhere ``tune_allocator`` does nothing and says so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8

# Free memory above this at the top of the heap goes back to the system.
DEFAULT_TRIM_THRESHOLD = 1 << 30


def tune_allocator(trim_threshold: int | None = None) -> bool:
    """Apply the settings above to this process; True when they took effect. Call it before
    starting threads: a thread that already has its own arena keeps it.
    ``SPRIG_MALLOC_TUNE=0`` leaves the allocator alone."""
    if os.environ.get("SPRIG_MALLOC_TUNE", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    path = ctypes.util.find_library("c")
    if path is None:
        return False
    try:
        libc = ctypes.CDLL(path)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return False
    threshold = trim_threshold if trim_threshold is not None else DEFAULT_TRIM_THRESHOLD
    ok = bool(mallopt(_M_MMAP_MAX, 0))
    ok = bool(mallopt(_M_TRIM_THRESHOLD, int(threshold))) and ok
    ok = bool(mallopt(_M_ARENA_MAX, 1)) and ok
    if ok:
        # madvise(HUGEPAGE) on heap memory makes the kernel compact and collapse pages under
        # a running query; the heap is reused, so 4 KiB pages are faulted once and kept.
        import numpy as np

        np._core.multiarray._set_madvise_hugepage(False)
    return ok
