"""Pinot's ``StringFunctions`` on text columns (numpy object arrays); the heavy lifting is
done by pyarrow.compute. Positions are 0-based, as in Java; ``strpos`` answers -1 when the
text is absent."""

from __future__ import annotations

import functools
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.functions.registry import FunctionArgumentError, register
from engine.functions.values import answer_like, arrow_strings

_STRING, _INT, _BOOL = "STRING", "INT", "BOOLEAN"
_JAVA_TRIM = "".join(chr(c) for c in range(33))  # String.trim(): every char <= ' '
_JAVA_SPACE = " \t\n\x0b\f\r"  # the regex class \s that Pinot's ltrim/rtrim strip


def _text(fn, a, *args, **kwargs):
    return answer_like(fn(arrow_strings(a), *args, **kwargs), a)


def _ints(values):
    if isinstance(values, pa.Array):
        return pc.cast(values, pa.int32())
    return np.asarray(values, dtype=np.int32) if isinstance(values, np.ndarray) else values


def _per_value(fn, *args):
    """``fn`` over each row, for the few Java string rules Arrow has no kernel for."""
    if not any(isinstance(a, np.ndarray) for a in args):
        return fn(*args)
    return np.frompyfunc(fn, len(args), 1)(*args)


@register("upper", 1, 1, _STRING, arrow=True)
def upper(a):
    return _text(pc.utf8_upper, a)


@register("lower", 1, 1, _STRING, arrow=True)
def lower(a):
    return _text(pc.utf8_lower, a)


@register("trim", 1, 1, _STRING, arrow=True)
def trim(a):
    return _text(pc.utf8_trim, a, _JAVA_TRIM)


@register("ltrim", 1, 1, _STRING, arrow=True)
def ltrim(a):
    return _text(pc.utf8_ltrim, a, _JAVA_SPACE)


@register("rtrim", 1, 1, _STRING, arrow=True)
def rtrim(a):
    return _text(pc.utf8_rtrim, a, _JAVA_SPACE)


@register(("length", "strlen"), 1, 1, _INT, arrow=True)
def length(a):
    return _ints(_text(pc.utf8_length, a))


@register("reverse", 1, 1, _STRING, arrow=True)
def reverse(a):
    return _text(pc.utf8_reverse, a)


@register("replace", 3, 3, _STRING, arrow=True)
def replace(a, find, substitute):
    return _text(pc.replace_substring, a, str(find), str(substitute))


@register(("substr", "substring"), 2, 3, _STRING, arrow=True)
def substr(a, start, end=-1):
    """0-based ``start`` (inclusive) to ``end`` (exclusive); ``end=-1`` means to the end."""
    start, end = int(start), int(end)
    if end < 0:
        return _text(pc.utf8_slice_codeunits, a, start)
    return _text(pc.utf8_slice_codeunits, a, start, end)


@register("concat", 2, 3, _STRING, arrow=True)
def concat(a, b, separator=""):
    """``a`` + ``separator`` + ``b``."""
    joined = pc.binary_join_element_wise(arrow_strings(a), arrow_strings(b), str(separator))
    return answer_like(joined, a, b)


@register("strpos", 2, 3, _INT)
def strpos(a, find, instance=None):
    """Index of the first (or ``instance``-th) occurrence of ``find``, -1 when absent."""
    if instance is None:
        return _ints(_text(pc.find_substring, a, str(find)))
    return _ints(_per_value(lambda s: _ordinal_index(s, str(find), int(instance)), a))


def _ordinal_index(text: str, find: str, instance: int) -> int:
    if instance <= 0:
        return -1
    index = -1
    for _ in range(instance):
        index = text.find(find, index + 1)
        if index < 0:
            return -1
    return index


@register("strrpos", 2, 2, _INT, arrow=True)
def strrpos(a, find):
    """Index of the last occurrence of ``find``, -1 when absent."""
    find = str(find)
    text = arrow_strings(a)
    from_end = pc.find_substring(pc.utf8_reverse(text), find[::-1])
    index = pc.subtract(pc.subtract(pc.utf8_length(text), from_end), len(find))
    return _ints(answer_like(pc.if_else(pc.less(from_end, 0), -1, index), a))


@register("startswith", 2, 2, _BOOL, arrow=True)
def startswith(a, prefix):
    return _text(pc.starts_with, a, str(prefix))


@register("endswith", 2, 2, _BOOL, arrow=True)
def endswith(a, suffix):
    return _text(pc.ends_with, a, str(suffix))


@register("contains", 2, 2, _BOOL, arrow=True)
def contains(a, substring):
    return _text(pc.match_substring, a, str(substring))


@register("strcmp", 2, 2, _INT)
def strcmp(a, b):
    """Java's ``compareTo``: the difference of the first differing characters, else of the
    lengths."""
    return _ints(_per_value(_compare_to, a, b))


def _compare_to(a, b) -> int:
    a, b = str(a), str(b)
    for x, y in zip(a, b, strict=False):
        if x != y:
            return ord(x) - ord(y)
    return len(a) - len(b)


def _pad(left: bool):
    def impl(a, size, pad=" "):
        size, pad = int(size), str(pad)
        if len(pad) == 1:
            fn = pc.utf8_lpad if left else pc.utf8_rpad
            return _text(fn, a, size, pad)
        return _per_value(lambda s: _java_pad(str(s), size, pad, left), a)

    return impl


def _java_pad(text: str, size: int, pad: str, left: bool) -> str:
    missing = size - len(text)
    if missing <= 0 or not pad:
        return text
    fill = (pad * (missing // len(pad) + 1))[:missing]
    return fill + text if left else text + fill


register("lpad", 2, 3, _STRING)(_pad(left=True))
register("rpad", 2, 3, _STRING)(_pad(left=False))


# ---- regular expressions over Java's Matcher.find() ----------------------------------------


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise FunctionArgumentError(f"Invalid regular expression {pattern!r}: {err}") from err


@register("regexpExtract", 2, 4, _STRING)
def regexp_extract(a, pattern, group=0, default=""):
    """Group ``group`` of the first match of ``pattern`` in each value, else ``default``
    (also when the pattern has fewer groups)."""
    regex, group = _regex(str(pattern)), int(group)

    def one(value):
        found = regex.search(str(value))
        return found.group(group) if found and group <= regex.groups else str(default)

    return _per_value(one, a)


@register("regexpLikeVar", 2, 2, _BOOL)
def regexp_like_var(a, pattern):
    """REGEXP_LIKE with a pattern per row (a column): does it match anywhere in the value."""
    out = _per_value(lambda value, p: _regex(str(p)).search(str(value)) is not None, a, pattern)
    return out.astype(bool) if isinstance(out, np.ndarray) else bool(out)
