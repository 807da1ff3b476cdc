"""The aggregation states a star-tree keeps per function, and how they combine."""

from __future__ import annotations

import numpy as np

COMPONENTS: dict[str, tuple[str, ...]] = {
    "SUM": ("sum",),
    "SUMMV": ("sum",),
    "COUNT": ("count",),
    "COUNTMV": ("count",),
    "MIN": ("min",),
    "MINMV": ("min",),
    "MAX": ("max",),
    "MAXMV": ("max",),
    "AVG": ("sum", "count"),
    "AVGMV": ("sum", "count"),
    "MINMAXRANGE": ("min", "max"),
}
COMBINE = {"sum": np.add, "count": np.add, "min": np.minimum, "max": np.maximum}
DTYPES = {"sum": np.float64, "count": np.int64, "min": np.float64, "max": np.float64}


def components_of(pair: str) -> tuple[str, ...]:
    return COMPONENTS[pair.partition("__")[0]]
