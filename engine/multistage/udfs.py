"""Pinot's scalar functions in the operators.

A call whose DataFusion twin has the same meaning is renamed (``STARTSWITH`` ->
``starts_with``); Pinot's arithmetic functions (``plus``, ``divide`` ...) answer DOUBLE as in
Pinot; everything else runs as a DataFusion UDF over the single-stage engine's own function
(``engine.functions``), so a function means the same in both engines. A UDF is declared per
call site with the argument types the planner found; its literal arguments are bound into it.
The specs travel with each stage (``UdfSpec``) and are registered by the worker.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from datafusion import SessionContext, udf
from sqlglot import exp

from engine.functions import lookup
from engine.multistage.types import arrow_type, pinot_type
from engine.multistage.udafs import KIND, UdafSpec, register_aggregate, result_type
from engine.query.errors import QueryError, QueryValidationError

# Pinot name (canonical: lower case, no underscores) -> DataFusion function of equal meaning
NATIVE = {
    "upper": "upper", "lower": "lower", "abs": "abs", "ceil": "ceil", "ceiling": "ceil",
    "floor": "floor", "exp": "exp", "ln": "ln", "log10": "log10", "log2": "log2",
    "sqrt": "sqrt", "sign": "signum", "reverse": "reverse", "ltrim": "ltrim",
    "rtrim": "rtrim", "lpad": "lpad", "rpad": "rpad", "coalesce": "coalesce",
    "nullif": "nullif", "greatest": "greatest", "least": "least", "power": "power",
    "pow": "power", "round": "round", "length": "character_length", "startswith": "starts_with",
    "endswith": "ends_with", "regexplike": "regexp_like", "sin": "sin", "cos": "cos",
    "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "atan2": "atan2",
    "degrees": "degrees", "radians": "radians", "cot": "cot", "trim": "trim",
    "initcap": "initcap", "ascii": "ascii", "chr": "chr", "left": "left", "right": "right",
    "repeat": "repeat", "truncate": "trunc", "arraylength": "array_length",
    "cardinality": "cardinality", "isnan": "isnan", "concatws": "concat_ws", "md5": "md5",
}  # fmt: skip
_BITWISE = {
    "bitand": exp.BitwiseAnd,
    "bitor": exp.BitwiseOr,
    "bitxor": exp.BitwiseXor,
    "bitshiftleft": exp.BitwiseLeftShift,
    "bitshiftright": exp.BitwiseRightShift,
}
_ARITHMETIC = {"plus": exp.Add, "add": exp.Add, "minus": exp.Sub, "sub": exp.Sub,
               "times": exp.Mul, "mult": exp.Mul, "divide": exp.Div, "div": exp.Div}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class UdfSpec:
    name: str  # the DataFusion name of this call site's UDF
    function: str  # the Pinot function (engine.functions)
    arg_types: tuple[str, ...]  # Arrow types (str) of the column arguments
    literals: tuple[tuple[int, object], ...]  # (position, value) of literal arguments
    num_args: int
    return_type: str  # Arrow type (str)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> UdfSpec:
        return cls(data["name"], data["function"], tuple(data["arg_types"]),
                   tuple((int(p), v) for p, v in data["literals"]), int(data["num_args"]),
                   data["return_type"])  # fmt: skip


def spec_from_json(data: dict) -> UdfSpec | UdafSpec:
    return UdafSpec.from_json(data) if data.get("kind") == KIND else UdfSpec.from_json(data)


def register_udf(ctx: SessionContext, spec: UdfSpec | UdafSpec) -> None:
    if isinstance(spec, UdafSpec):
        register_aggregate(ctx, spec, parse_type)
        return
    function = lookup(spec.function)
    literals = dict(spec.literals)
    out_type = parse_type(spec.return_type)

    def call(*arrays: pa.Array) -> pa.Array:
        n = len(arrays[0]) if arrays else 1
        args, columns, valid = [], iter(arrays), None
        for position in range(spec.num_args):
            if position in literals:
                args.append(literals[position])
                continue
            array = next(columns)
            if array.null_count:
                mask = pc.is_valid(array)
                valid = mask if valid is None else pc.and_(valid, mask)
            args.append(_numpy(array))
        result = function.impl(*args)
        if np.isscalar(result) or result is None:
            result = [result] * n
        out = pa.array(result, from_pandas=True)
        if out.type != out_type:
            out = out.cast(out_type, safe=False)
        if valid is not None:
            out = pc.if_else(valid, out, pa.scalar(None, out_type))
        return out

    types = [parse_type(t) for t in spec.arg_types]
    ctx.register_udf(udf(call, types, out_type, "immutable", spec.name))


NEGATE = {"int32": "sprig_negate_int", "int64": "sprig_negate_long"}


def register_builtins(ctx: SessionContext) -> None:
    """Functions every stage may call: integer negation that fails on overflow, as Pinot's
    (``-Integer.MIN_VALUE`` is an error, not MIN_VALUE again)."""
    for builtin in _builtins():
        ctx.register_udf(builtin)


@functools.cache
def _builtins() -> list:
    """Made once: a UDF object registers in any number of sessions, one per stage worker."""
    out = []
    for arrow_name, name in NEGATE.items():
        arrow = pa.type_for_alias(arrow_name)
        out.append(udf(_negate(arrow), [arrow], arrow, "immutable", name))
    return out


def _negate(arrow: pa.DataType):
    lowest = -(2 ** (arrow.bit_width - 1))
    word = "integer" if arrow.bit_width == 32 else "long"

    def negate(values: pa.Array) -> pa.Array:
        if pc.any(pc.equal(values, lowest)).as_py():
            raise ValueError(f"{word} overflow")
        return pc.negate(values)

    return negate


def parse_type(text: str) -> pa.DataType:
    return _TYPES.get(text) or pa.type_for_alias(text)


_TYPES = {
    "timestamp[ms]": pa.timestamp("ms"), "decimal128(38, 18)": pa.decimal128(38, 18),
    "list<item: string>": pa.list_(pa.string()), "list<item: int32>": pa.list_(pa.int32()),
    "list<item: int64>": pa.list_(pa.int64()), "list<item: double>": pa.list_(pa.float64()),
    "list<item: float>": pa.list_(pa.float32()),
}  # fmt: skip


def _numpy(array: pa.Array):
    if pa.types.is_list(array.type):
        return np.array(array.to_pylist(), dtype=object)
    if array.null_count and (pa.types.is_integer(array.type) or pa.types.is_floating(array.type)):
        array = pc.fill_null(array, 0)
    if pa.types.is_timestamp(array.type):
        array = array.cast(pa.int64())
    return array.to_numpy(zero_copy_only=False)


class ScalarMapper:
    """Maps Pinot scalar calls for the renderer; ``arg_types`` answers the Arrow types of
    bound argument expressions (the planner's typing pass)."""

    def __init__(self) -> None:
        self.specs: dict[str, UdfSpec] = {}  # call site (SQL) -> spec
        self.arg_types = None  # set by the typing pass: list[exp] -> list[pa.DataType]
        self.ctx: SessionContext | None = None

    def __call__(self, name: str, args: list[exp.Expression], node: exp.Expression):
        if self.declared(name):  # already mapped (a call inside a call, rendered again)
            return node
        key_name = name.lower().replace("_", "")
        if key_name == "round" and len(args) == 2 and self._integer(args[0]):
            return self._udf(name, args)  # Pinot's round(timeValue, roundToNearest)
        if key_name in NATIVE:
            return exp.Anonymous(this=NATIVE[key_name], expressions=args)
        if key_name in _ARITHMETIC and len(args) == 2:
            a, b = (exp.Cast(this=x, to=exp.DataType.build("DOUBLE")) for x in args)
            return exp.Paren(this=_ARITHMETIC[key_name](this=a, expression=b))
        if key_name == "mod" and len(args) == 2:
            return exp.Paren(this=exp.Mod(this=args[0], expression=args[1]))
        if key_name == "concat" and len(args) in (2, 3):
            parts = [args[0], args[2], args[1]] if len(args) == 3 else args
            out = parts[0]
            for p in parts[1:]:
                out = exp.DPipe(this=out, expression=p)
            return exp.Paren(this=out)
        if key_name in ("arraytomv", "valuein"):
            return args[0]
        if key_name == "regexpreplace" and len(args) == 3:  # every match, as in Pinot
            return exp.Anonymous(
                this="regexp_replace", expressions=[*args, exp.Literal.string("g")]
            )
        if key_name in _BITWISE and len(args) == 2:
            return exp.Paren(this=_BITWISE[key_name](this=args[0], expression=args[1]))
        if key_name == "bitnot" and len(args) == 1:  # two's complement: ~x = -1 - x
            return exp.Paren(this=exp.Sub(this=exp.Literal.number(-1), expression=args[0]))
        return self._udf(name, args)

    def _integer(self, arg: exp.Expression) -> bool:
        if self.arg_types is None or isinstance(arg, exp.Literal):
            return isinstance(arg, exp.Literal) and not arg.is_string and arg.this.isdigit()
        return pa.types.is_integer(self.arg_types([arg])[0])

    def declared(self, name: str) -> bool:
        return any(spec.name == name.lower() for spec in self.specs.values())

    def aggregate(self, name: str, args: list[exp.Expression]) -> exp.Expression:
        """A single-stage aggregation call as this query's UDAF (``engine.multistage.udafs``)."""
        site = "agg:" + exp.Anonymous(this=name, expressions=args).sql()
        columns = [a for a in args if not isinstance(a, exp.Literal | exp.Boolean | exp.Null)]
        spec = self.specs.get(site)
        if spec is None:
            if self.arg_types is None:
                raise QueryValidationError(f"Aggregation {name} cannot be typed here")
            positional = iter(range(len(columns)))
            pinot_args = [a.sql() if isinstance(a, exp.Literal | exp.Boolean | exp.Null)
                          else f'"${next(positional)}"' for a in args]  # fmt: skip
            call = f"{name}({', '.join(pinot_args)})"
            types = self.arg_types(columns) if columns else []
            try:
                returns = result_type(call)
            except QueryError as exc:
                raise QueryValidationError(f"{name.upper()}: {exc.message}") from exc
            spec = UdafSpec(f"pinot_agg_{len(self.specs)}", call, tuple(str(t) for t in types),
                            str(arrow_type(returns)))  # fmt: skip
            self.specs[site] = spec
            if self.ctx is not None:
                register_udf(self.ctx, spec)
        return exp.Anonymous(this=spec.name, expressions=columns)

    def _udf(self, name: str, args: list[exp.Expression]) -> exp.Expression:
        function = lookup(name)
        if function is None:
            raise QueryValidationError(f"Unsupported function: {name.upper()}")
        problem = function.arity_error(len(args))
        if problem is not None:
            raise QueryValidationError(problem)
        site = exp.Anonymous(this=name, expressions=args).sql()
        spec = self.specs.get(site)
        if spec is None:
            spec = self._declare(function, name, args)
            self.specs[site] = spec
        columns = [a for a in args if not isinstance(a, exp.Literal | exp.Boolean | exp.Null)]
        return exp.Anonymous(this=spec.name, expressions=columns)

    def _declare(self, function, name: str, args: list[exp.Expression]) -> UdfSpec:
        if self.arg_types is None:
            raise QueryValidationError(f"Function {name} cannot be typed here")
        literals, columns = [], []
        for i, a in enumerate(args):
            if isinstance(a, exp.Literal):
                value = a.this if a.is_string else _number(a.this)
                literals.append((i, value))
            elif isinstance(a, exp.Boolean):
                literals.append((i, bool(a.this)))
            elif isinstance(a, exp.Null):
                literals.append((i, None))
            else:
                columns.append(a)
        types = self.arg_types(columns) if columns else []
        pinot_args = []
        column_types = iter(types)
        for i in range(len(args)):
            if any(p == i for p, _ in literals):
                value = dict(literals)[i]
                pinot_args.append("STRING" if isinstance(value, str) else
                                  "DOUBLE" if isinstance(value, float) else "LONG")  # fmt: skip
            else:
                pinot_args.append(pinot_type(next(column_types)))
        result = _result_type(function, name, pinot_args, dict(literals))
        spec = UdfSpec(f"pinot_{function.name}_{len(self.specs)}", function.name,
                       tuple(str(t) for t in types), tuple(literals), len(args),
                       str(arrow_type(result)))  # fmt: skip
        if self.ctx is not None:
            register_udf(self.ctx, spec)
        return spec


def _result_type(function, name: str, arg_types: list[str], literals: dict) -> str:
    key_name = name.lower().replace("_", "")
    if key_name == "jsonextractscalar" and 2 in literals:
        return str(literals[2]).upper().removesuffix("_ARRAY")
    if key_name == "datetimeconvert":
        fmt = str(literals.get(2, ""))
        return "STRING" if "SIMPLE_DATE_FORMAT" in fmt.upper() else "LONG"
    result = function.output_type(arg_types)
    if key_name in _ARRAY_RESULTS:
        return str(result)
    return "DOUBLE" if result in ("UNKNOWN", None) else str(result).removesuffix("_ARRAY")


_ARRAY_RESULTS = {"jsonextractkey"}  # Pinot's multi-stage type for them is an ARRAY


def _number(text: str):
    try:
        return int(text)
    except ValueError:
        return float(text)
