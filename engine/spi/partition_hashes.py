"""The hashes and Java texts behind Pinot's partition functions (``engine.spi.partition``):
Kafka's murmur2, both Murmur3 variants, Java's ``String.hashCode`` and ``Arrays.hashCode``, and
the text Java's ``toString`` gives a stored value, which is what Pinot hashes."""

from __future__ import annotations

import decimal
import math

import mmh3
import numpy as np

from engine.common.types import DataType

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
INTEGRAL_TYPES = frozenset({DataType.INT, DataType.LONG, DataType.BOOLEAN, DataType.TIMESTAMP})
_TWO_DIGITS = decimal.Context(prec=2, rounding=decimal.ROUND_HALF_EVEN)
_WIDE = decimal.Context(prec=200)  # BIG_DECIMAL values have up to 38 digits: never round


# ---- hashes ----------------------------------------------------------------------------------
def _signed32(h: int) -> int:
    h &= _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (MurmurHash2 with seed 0x9747b28c) as a signed 32-bit int.
    No maintained Python package exposes this 32-bit variant (mmh3 is murmur3 only)."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little") * m & _MASK32
        k = (k ^ (k >> 24)) * m & _MASK32
        h = (h * m & _MASK32) ^ k
    tail = data[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = h * m & _MASK32
    h = (h ^ (h >> 13)) * m & _MASK32
    return _signed32(h ^ (h >> 15))


def murmur3_x86_32(data: bytes, seed: int) -> int:
    """Standard 32-bit x86 murmur3 (Guava's ``murmur3_32_fixed``) as a signed int."""
    return mmh3.hash(data, seed & _MASK32, signed=True)


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _fmix64(k: int) -> int:
    k = (k ^ (k >> 33)) * 0xFF51AFD7ED558CCD & _MASK64
    k = (k ^ (k >> 33)) * 0xC4CEB9FE1A85EC53 & _MASK64
    return k ^ (k >> 33)


def murmur3_x64_32(data: bytes, seed: int) -> int:
    """Pinot's ``x64_32`` variant: the upper 32 bits (signed) of h1 in Infinispan's MurmurHash3
    x64, an early x64 revision whose mixing constants change after every block. No Python
    package implements this revision, so it is written out here."""
    seed64 = seed & _MASK64  # Java widens the int seed with its sign
    h1, h2 = 0x9368E53C2F6AF274 ^ seed64, 0x586DCD208F7CD3FD ^ seed64
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F

    def mix(k1: int, k2: int) -> None:
        nonlocal h1, h2, c1, c2
        k1 = _rotl64(k1 * c1 & _MASK64, 23) * c2 & _MASK64
        h1 = ((h1 ^ k1) + h2) & _MASK64
        h2 = _rotl64(h2, 41)
        k2 = _rotl64(k2 * c2 & _MASK64, 23) * c1 & _MASK64
        h2 = ((h2 ^ k2) + h1) & _MASK64
        h1 = (h1 * 3 + 0x52DCE729) & _MASK64
        h2 = (h2 * 3 + 0x38495AB5) & _MASK64
        c1 = (c1 * 5 + 0x7B7D159C) & _MASK64
        c2 = (c2 * 5 + 0x6BCE6396) & _MASK64

    length = len(data)
    whole = length - length % 16
    for i in range(0, whole, 16):
        mix(
            int.from_bytes(data[i : i + 8], "little"),
            int.from_bytes(data[i + 8 : i + 16], "little"),
        )
    if whole < length:
        # the tail's bytes are sign-extended before the shift, as Java's (long) byte is
        k = [0, 0]
        for j, b in enumerate(data[whole:]):
            k[j // 8] ^= ((b - 256 if b > 127 else b) << (8 * (j % 8))) & _MASK64
        mix(k[0], k[1])
    h2 ^= length
    h1 = (h1 + h2) & _MASK64
    h2 = (h2 + h1) & _MASK64
    h1 = (_fmix64(h1) + _fmix64(h2)) & _MASK64
    return _signed32(h1 >> 32)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: over UTF-16 code units, signed 32-bit."""
    units = np.frombuffer(text.encode("utf-16-be", "surrogatepass"), dtype=">u2")
    h = 0
    for unit in units.tolist():
        h = (31 * h + unit) & _MASK32
    return _signed32(h)


def java_bytes_hash(data: bytes) -> int:
    """Java's ``Arrays.hashCode(byte[])`` (bytes are signed), signed 32-bit."""
    h = 1
    for b in data:
        h = (31 * h + (b - 256 if b > 127 else b)) & _MASK32
    return _signed32(h)


def kafka_abs(h: int) -> int:
    return 0 if h == -(2**31) else abs(h)


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "replace")  # Java's getBytes(UTF_8) writes '?' for lone surrogates


# ---- the text Pinot hashes -------------------------------------------------------------------
def java_double_text(value: float) -> str:
    """``Double.toString``: the shortest digits that round-trip (Java 19+, as Python's repr),
    plain for 1e-3 <= |v| < 1e7, else computerized scientific ("1.0E10", "1.5E-5")."""
    value = float(value)
    return _java_text(repr(value), value)


def java_float_text(value: float) -> str:
    """``Float.toString`` of the value rounded to a 32-bit float (shortest float digits)."""
    with np.errstate(over="ignore"):  # Java's (float) cast overflows to Infinity too
        single = np.float32(value)
    return _java_text(str(single), float(single))


def _java_text(shortest: str, value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    decimal_value = decimal.Decimal(shortest)
    if len(decimal_value.normalize(_WIDE).as_tuple().digits) == 1:
        # Java prints at least two digits, choosing the two-digit decimal closest to the exact
        # binary value: 4.9E-324, not 5.0E-324 (differs only for subnormals)
        decimal_value = _TWO_DIGITS.plus(decimal.Decimal(value))
    sign, digit_tuple, exponent = decimal_value.normalize(_WIDE).as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # digits before the decimal point
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            body = "0." + "0" * -point + digits
        elif point >= len(digits):
            body = digits + "0" * (point - len(digits)) + ".0"
        else:
            body = digits[:point] + "." + digits[point:]
    else:
        body = f"{digits[0]}.{digits[1:] or '0'}E{point - 1}"
    return ("-" if sign else "") + body


def plain_decimal(value: decimal.Decimal) -> str:
    # Stored BIG_DECIMALs have a fixed scale (decimal128(38, 18)); the normalized plain text
    # is Pinot's toPlainString of the value as it was ingested without trailing zeros.
    return format(value.normalize(_WIDE), "f")


def value_text(value: object, data_type: DataType) -> str:
    """A stored value's text as Pinot's segment writer hands it to the partition function:
    integers (INT, LONG, BOOLEAN as 0/1, TIMESTAMP as epoch ms) in decimal, FLOAT and DOUBLE
    as Java prints them, BIG_DECIMAL plain, BYTES as lower-case hex, strings unchanged."""
    if data_type in INTEGRAL_TYPES:
        return str(int(value))
    if data_type is DataType.DOUBLE:
        return java_double_text(value)
    if data_type is DataType.FLOAT:
        return java_float_text(value)
    if data_type is DataType.BIG_DECIMAL:
        return plain_decimal(decimal.Decimal(value))
    if data_type is DataType.BYTES:
        return bytes(value).hex()
    return value if isinstance(value, str) else str(value)
