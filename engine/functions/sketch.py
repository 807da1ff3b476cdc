"""Theta sketches (Apache DataSketches, the library Pinot uses): the sketch text that
DISTINCTCOUNTRAWTHETASKETCH answers, and Pinot's scalar functions over sketches
(``GET_THETA_SKETCH_ESTIMATE``, ``THETA_SKETCH_UNION`` / ``_INTERSECT`` / ``_DIFF``).

A sketch travels as Pinot's raw result does: the base64 of a serialized compact sketch.
Values are hashed as Pinot's Java sketches hash them (the C++ library is compatible with
the Java one): integers as 64-bit longs, floats widened to doubles, text as UTF-8 bytes,
empty text skipped.
"""

from __future__ import annotations

import base64
import binascii

import datasketches as ds
import numpy as np

from engine.functions.registry import FunctionValueError, register

DEFAULT_LG_K = 14  # Pinot's DEFAULT_THETA_SKETCH_NOMINAL_ENTRIES: 16384
MIN_LG_K, MAX_LG_K = 5, 26  # the library's bounds (Pinot's Java one allows 4)


def new_theta(lg_k: int = DEFAULT_LG_K):
    return ds.update_theta_sketch(max(MIN_LG_K, min(MAX_LG_K, lg_k)))


def update_theta(sketch, values) -> None:
    """Add each value (a numpy array of one column's values) to ``sketch``."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        for v in values.astype(np.int64).tolist():
            sketch.update(v)
    elif values.dtype.kind == "f":
        for v in values.astype(np.float64).tolist():
            sketch.update(v)
    else:
        for v in values.tolist():
            sketch.update(v.hex() if isinstance(v, bytes) else str(v))


def theta_text(sketch) -> str:
    compact = sketch.compact() if isinstance(sketch, ds.update_theta_sketch) else sketch
    return base64.b64encode(compact.serialize()).decode()


def theta_of(value):
    """A sketch from Pinot's sketch text (base64) or bytes."""
    if isinstance(value, ds.theta_sketch):
        return value
    try:
        blob = base64.b64decode(value, validate=True) if isinstance(value, str) else bytes(value)
        return ds.compact_theta_sketch.deserialize(blob)
    except (binascii.Error, ValueError, RuntimeError, TypeError) as exc:
        raise FunctionValueError(f"Not a theta sketch: {str(value)[:40]!r}") from exc


def union_of(sketches, lg_k: int = DEFAULT_LG_K):
    union = ds.theta_union(max(MIN_LG_K, min(MAX_LG_K, lg_k)))
    for sketch in sketches:
        union.update(sketch)
    return union.get_result()


def _rows(fn, *columns):
    """``fn`` per row of sketch columns (arrays or scalars)."""
    if all(np.ndim(c) == 0 for c in columns):
        return fn(*columns)
    n = max(len(c) for c in columns if np.ndim(c))
    expanded = [c if np.ndim(c) else [c] * n for c in columns]
    return np.array([fn(*row) for row in zip(*expanded, strict=True)], dtype=object)


@register("getThetaSketchEstimate", 1, 1, "LONG")
def get_theta_sketch_estimate(sketches):
    def estimate(value):
        return int(np.floor(theta_of(value).get_estimate() + 0.5))  # Java's Math.round

    out = _rows(estimate, sketches)
    return out if np.ndim(out) == 0 else out.astype(np.int64)


@register("thetaSketchUnion", 2, 5, "STRING")
def theta_sketch_union(*sketches):
    return _rows(lambda *row: theta_text(union_of(theta_of(v) for v in row)), *sketches)


@register("thetaSketchIntersect", 2, 5, "STRING")
def theta_sketch_intersect(*sketches):
    def intersect(*row):
        intersection = ds.theta_intersection()
        for value in row:
            intersection.update(theta_of(value))
        return theta_text(intersection.get_result())

    return _rows(intersect, *sketches)


@register("thetaSketchDiff", 2, 2, "STRING")
def theta_sketch_diff(a, b):
    return _rows(lambda x, y: theta_text(ds.theta_a_not_b().compute(theta_of(x), theta_of(y))),
                 a, b)  # fmt: skip
