"""Pinot's built-in scalar functions for ingestion transforms and filters, on Arrow arrays.

Each function takes Arrow arrays or Python scalars (literals) and returns an Arrow array or a
scalar. Names are matched case-insensitively, as Pinot does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from engine.spi.datetime_format import format_java_datetime, parse_java_datetime

MILLIS = {"seconds": 1000, "minutes": 60_000, "hours": 3_600_000, "days": 86_400_000}

FUNCTIONS: dict[str, Callable] = {}


def register(*names: str):
    def wrap(fn: Callable) -> Callable:
        for name in names:
            FUNCTIONS[name.lower()] = fn
        return fn

    return wrap


def _i64(x):
    return pc.cast(x, pa.int64()) if isinstance(x, pa.Array | pa.ChunkedArray) else int(x)


def _floordiv(x, d: int):
    x = pc.cast(x, pa.int64())
    q = pc.divide(x, d)  # integer division truncates toward zero; fix negatives to floor
    fix = pc.and_(pc.less(x, 0), pc.not_equal(pc.multiply(q, d), x))
    return pc.subtract(q, pc.cast(fix, pa.int64()))


def _make_epoch_functions() -> None:
    for unit, size in MILLIS.items():
        cap = unit.capitalize()

        def to_epoch(millis, _size=size):
            return _floordiv(millis, _size)

        def to_epoch_rounded(millis, bucket, _size=size):
            b = int(bucket)
            return pc.multiply(_floordiv(_floordiv(millis, _size), b), b)

        def to_epoch_bucket(millis, bucket, _size=size):
            return _floordiv(millis, _size * int(bucket))

        def from_epoch(value, _size=size):
            return pc.multiply(_i64(value), _size)

        def from_epoch_bucket(value, bucket, _size=size):
            return pc.multiply(_i64(value), _size * int(bucket))

        register(f"toEpoch{cap}")(to_epoch)
        register(f"toEpoch{cap}Rounded")(to_epoch_rounded)
        register(f"toEpoch{cap}Bucket")(to_epoch_bucket)
        register(f"fromEpoch{cap}")(from_epoch)
        register(f"fromEpoch{cap}Bucket")(from_epoch_bucket)


_make_epoch_functions()


@register("fromDateTime")
def from_date_time(value, pattern, *_timezone):
    """Parse strings with a Java pattern to epoch ms (UTC unless the text carries an offset)."""
    return parse_java_datetime(value, str(pattern))


@register("toDateTime")
def to_date_time(millis, pattern, *_timezone):
    """Format epoch ms with a Java pattern, in UTC."""
    return format_java_datetime(pc.cast(millis, pa.int64()), str(pattern))


@register("now")
def now():
    return int(time.time() * 1000)


@register("round")
def round_to(value, bucket=None):
    """Pinot's round(timeValue, roundToNearest): floor to a multiple of ``bucket``."""
    if bucket is None:
        return pc.round(value)
    b = int(bucket)
    return pc.multiply(_floordiv(value, b), b)


def _json_rows(value) -> list:
    rows = value.to_pylist()
    out = []
    for v in rows:
        if isinstance(v, str):
            try:
                v = orjson.loads(v)
            except orjson.JSONDecodeError:
                v = None
        out.append(v)
    return out


@register("jsonFormat")
def json_format(value):
    """Nested values (structs, lists, maps, JSON text) as compact JSON text."""
    if pa.types.is_string(value.type):
        return value
    return pa.array(
        [None if v is None else orjson.dumps(v, default=str).decode() for v in value.to_pylist()],
        pa.string(),
    )


_PATH_STEP = re.compile(r"\.([^.\[]+)|\['([^']*)'\]|\[(\d+)\]")


def _json_path(doc, path: str):
    """A small JSONPath subset: ``$.a.b``, ``$.a[0]``, ``$['a']``."""
    if not path.startswith("$"):
        raise ValueError(f"JSON path must start with $: {path!r}")
    for step in _PATH_STEP.finditer(path, 1):
        if doc is None:
            return None
        key, index = step.group(1) or step.group(2), step.group(3)
        if index is not None:
            i = int(index)
            doc = doc[i] if isinstance(doc, list) and i < len(doc) else None
        else:
            doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def _json_path_typed(value, path, default, arrow_type):
    rows = _json_rows(value)
    out = []
    for doc in rows:
        v = _json_path(doc, str(path))
        if v is None or (isinstance(v, dict | list) and arrow_type != pa.string()):
            v = default
        elif arrow_type == pa.string() and not isinstance(v, str):
            v = orjson.dumps(v).decode()
        out.append(v)
    return pa.array(out).cast(arrow_type) if out else pa.array([], arrow_type)


@register("jsonPathString")
def json_path_string(value, path, default=None):
    return _json_path_typed(value, path, default, pa.string())


@register("jsonPathLong")
def json_path_long(value, path, default=None):
    return _json_path_typed(value, path, default, pa.int64())


@register("jsonPathDouble")
def json_path_double(value, path, default=None):
    return _json_path_typed(value, path, default, pa.float64())


@register("jsonPathArray")
def json_path_array(value, path):
    rows = _json_rows(value)
    vals = []
    for doc in rows:
        v = _json_path(doc, str(path))
        vals.append(v if isinstance(v, list) else None if v is None else [v])
    return pa.array(vals)


@register("upper")
def upper(value):
    return pc.utf8_upper(value)


@register("lower")
def lower(value):
    return pc.utf8_lower(value)


@register("trim")
def trim(value):
    return pc.utf8_trim_whitespace(value)


@register("length", "strlen")
def length(value):
    return pc.utf8_length(value)


@register("reverse")
def reverse(value):
    return pc.utf8_reverse(value)


@register("concat")
def concat(a, b, separator=""):
    """Pinot's concat(a, b[, separator])."""
    return pc.binary_join_element_wise(
        pc.cast(a, pa.string()), pc.cast(b, pa.string()), str(separator)
    )


@register("substr", "substring")
def substr(value, begin, end=-1):
    """Pinot's substr: 0-based ``begin`` inclusive, ``end`` exclusive (-1 = to the end)."""
    stop = None if int(end) == -1 else int(end)
    return pc.utf8_slice_codeunits(value, int(begin), stop)


@register("replace")
def replace(value, find, substitute):
    return pc.replace_substring(value, str(find), str(substitute))


@register("strcmp")
def strcmp(a, b):
    lt = pc.cast(pc.less(a, b), pa.int32())
    gt = pc.cast(pc.greater(a, b), pa.int32())
    return pc.subtract(gt, lt)


@register("plus", "add")
def plus(a, b):
    return pc.add(a, b)


@register("minus", "sub")
def minus(a, b):
    return pc.subtract(a, b)


@register("times", "mult")
def times(a, b):
    return pc.multiply(a, b)


@register("divide", "div")
def divide(a, b):
    return pc.divide(pc.cast(a, pa.float64()) if isinstance(a, pa.Array) else float(a), b)


@register("mod")
def mod(a, b):
    a = pc.cast(a, pa.int64())
    return pc.subtract(a, pc.multiply(pc.divide(a, int(b)), int(b)))


@register("abs")
def absolute(a):
    return pc.abs(a)


@register("ceil", "ceiling")
def ceil(a):
    return pc.ceil(a)


@register("floor")
def floor(a):
    return pc.floor(a)


@register("equals")
def equals(a, b):
    return pc.equal(a, b)


@register("notEquals")
def not_equals(a, b):
    return pc.not_equal(a, b)


@register("greaterThan")
def greater_than(a, b):
    return pc.greater(a, b)


@register("greaterThanOrEqual")
def greater_than_or_equal(a, b):
    return pc.greater_equal(a, b)


@register("lessThan")
def less_than(a, b):
    return pc.less(a, b)


@register("lessThanOrEqual")
def less_than_or_equal(a, b):
    return pc.less_equal(a, b)


@register("and")
def and_(*args):
    out = args[0]
    for a in args[1:]:
        out = pc.and_kleene(out, a)
    return out


@register("or")
def or_(*args):
    out = args[0]
    for a in args[1:]:
        out = pc.or_kleene(out, a)
    return out


@register("not")
def not_(a):
    return pc.invert(a)


@register("stPoint")
def st_point(x, y, *_is_geography):
    """A point as OGC WKB bytes (little-endian, type 1). Pinot keeps its own geometry
    serialization; WKB is the portable equivalent and what readers here expect."""
    xs = pc.cast(x, pa.float64()).to_numpy(zero_copy_only=False)
    ys = pc.cast(y, pa.float64()).to_numpy(zero_copy_only=False)
    records = np.zeros(
        len(xs), dtype=[("order", "u1"), ("kind", "<u4"), ("x", "<f8"), ("y", "<f8")]
    )
    records["order"], records["kind"], records["x"], records["y"] = 1, 1, xs, ys
    data = pa.py_buffer(records.tobytes())
    offsets = pa.py_buffer(np.arange(0, 21 * (len(xs) + 1), 21, dtype=np.int32).tobytes())
    valid = pc.and_(pc.is_valid(x), pc.is_valid(y)) if isinstance(x, pa.Array) else None
    out = pa.BinaryArray.from_buffers(pa.binary(), len(xs), [None, offsets, data])
    return pc.if_else(valid, out, pa.scalar(None, pa.binary())) if valid is not None else out


@register("toSphericalGeography", "toGeometry")
def to_spherical_geography(value):
    """Identity on WKB bytes (the geography/geometry distinction is not recorded)."""
    return value
