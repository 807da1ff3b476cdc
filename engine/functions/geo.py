"""Geospatial constructors used by ingestion transforms (``stPoint(lon, lat)``)."""

from __future__ import annotations

import numpy as np

from engine.functions.registry import register
from engine.functions.values import as_float


@register("stPoint", 2, 3, "BYTES")
def st_point(x, y, *_is_geography):
    """A point as OGC WKB bytes (little-endian, type 1). Pinot keeps its own geometry
    serialization; WKB is the portable equivalent and what readers here expect."""
    scalar = np.ndim(x) == 0 and np.ndim(y) == 0
    xs, ys = np.broadcast_arrays(np.atleast_1d(as_float(x)), np.atleast_1d(as_float(y)))
    records = np.zeros(
        len(xs), dtype=[("order", "u1"), ("kind", "<u4"), ("x", "<f8"), ("y", "<f8")]
    )
    records["order"], records["kind"], records["x"], records["y"] = 1, 1, xs, ys
    out = np.empty(len(xs), dtype=object)
    out[:] = [r.tobytes() for r in records]
    return out[0] if scalar else out


@register(("toSphericalGeography", "toGeometry"), 1, 1, "BYTES")
def to_spherical_geography(value):
    """Identity on WKB bytes (the geography/geometry distinction is not recorded)."""
    return value
