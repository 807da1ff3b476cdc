"""``ParsedQuery`` + schema -> ``QueryPlan``: aliases resolved, aggregations collected,
columns and functions validated, result column names and types decided.

The plan is what servers execute and brokers reduce; it is built once per SQL text (see
``engine.query.runner``) and never mutated afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from engine.query import functions
from engine.query.aggregation import (
    AggregationFunction,
    create_aggregation,
    is_aggregation,
    with_null_handling,
)
from engine.query.decoded_cache import MemoKey
from engine.query.errors import QueryValidationError, UnknownColumnError
from engine.query.evaluate import NULL_FORMS, check_null_form
from engine.query.expressions import (
    CONNECTIVES,
    PREDICATES,
    STAR,
    Expression,
    Function,
    Identifier,
    Literal,
    columns_of,
    folds_constants,
    replace,
    walk,
)
from engine.query.parser import OrderItem, ParsedQuery, parse_sql
from engine.spi.table_name import split_table_name

DEFAULT_LIMIT = 10
DEFAULT_NUM_GROUPS_LIMIT = 100_000
DEFAULT_TIMEOUT_MS = 10_000
_NUMERIC_AGGREGATIONS = {"sum", "min", "max", "avg", "minmaxrange", "percentile", "percentileest",
                         "percentiletdigest", "percentilekll", "varpop", "varsamp", "stddevpop", "stddevsamp"}  # fmt: skip


@dataclass(frozen=True)
class ColumnInfo:
    data_type: str  # Pinot type name: INT, LONG, FLOAT, DOUBLE, STRING, ...
    single_value: bool = True


@dataclass
class QueryPlan:
    sql: str
    table: str  # as written in FROM
    raw_table: str  # without _OFFLINE/_REALTIME: what the broker routes on
    table_type: str | None  # "OFFLINE" / "REALTIME" when the query names one
    kind: str  # "selection" | "aggregation" | "group_by"
    select: list[Expression]
    column_names: list[str]
    column_types: list[str]
    filter: Expression | None
    group_by: list[Expression]
    aggregations: list[AggregationFunction]
    having: Expression | None
    order_by: list[OrderItem]
    limit: int
    offset: int
    distinct: bool
    explain: bool
    options: dict[str, str]
    columns: dict[str, ColumnInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # enableNullHandling decides what each aggregation skips and how it finalizes; a plan
        # given other options is a new one (dataclasses.replace), which runs this again
        self.aggregations = with_null_handling(self.aggregations, self.null_handling)

    # The options are read on every segment of every query: each is parsed once per plan
    # (plans are never mutated; ``dataclasses.replace`` makes a new one).
    @cached_property
    def num_groups_limit(self) -> int:
        return int(self.options.get("numGroupsLimit", DEFAULT_NUM_GROUPS_LIMIT))

    @cached_property
    def timeout_ms(self) -> int:
        return int(self.options.get("timeoutMs", DEFAULT_TIMEOUT_MS))

    @cached_property
    def trace(self) -> bool:
        """Whether to record per-segment operator timings (``engine.query.trace``)."""
        return self.options.get("trace", "false").lower() == "true"

    @cached_property
    def use_star_tree(self) -> bool:
        return self.options.get("useStarTree", "true").lower() != "false"

    @cached_property
    def null_handling(self) -> bool:
        return self.options.get("enableNullHandling", "false").lower() == "true"

    @cached_property
    def filter_memo_key(self) -> MemoKey | None:
        """The decoded-cache key of the filter's matching docs on a segment; None when they
        cannot be kept: a filter with ``NOW()`` moves between executions, and one with an
        unhashable literal cannot be a key."""
        return self._memo_key("filter", self.filter, self.null_handling)

    @cached_property
    def segment_memo_key(self) -> MemoKey | None:
        """The decoded-cache key of what this plan decided on a segment (pruned or not, the
        star-tree used, the filter's docs): everything those read, so equal plans share it.
        None as for ``filter_memo_key``."""
        return self._memo_key(
            "segment", self.kind, self.filter, tuple(self.group_by),
            tuple((fn.call, fn.filter, fn.multi_value) for fn in self.aggregations),
            self.use_star_tree, self.null_handling,
        )  # fmt: skip

    def _memo_key(self, *parts) -> MemoKey | None:
        if folds_constants(self.filter):
            return None
        try:
            return MemoKey.interned(*parts)
        except TypeError:  # an unhashable literal
            return None

    @property
    def referenced_columns(self) -> set[str]:
        exprs = [*self.select, *self.group_by, *(o.expr for o in self.order_by)]
        exprs += [a.argument for a in self.aggregations if a.argument is not None]
        exprs += [a.filter for a in self.aggregations if a.filter is not None]
        exprs += [
            a.time_argument
            for a in self.aggregations
            if getattr(a, "time_argument", None) is not None
        ]
        exprs += [e for e in (self.filter, self.having) if e is not None]
        return set().union(*(columns_of(e) for e in exprs)) if exprs else set()


def columns_from_schema(schema) -> dict[str, ColumnInfo]:
    """Column infos from an ``engine.spi.schema.Schema`` (or a ready dict)."""
    if schema is None:
        return {}
    if isinstance(schema, dict):
        return schema
    return {f.name: ColumnInfo(str(f.data_type), bool(f.single_value)) for f in schema.fields}


def compile_query(sql: str, schema=None) -> QueryPlan:
    """Parse and plan ``sql``. With a schema, unknown columns are rejected (code 710)."""
    return build_plan(parse_sql(sql), sql, columns_from_schema(schema))


def build_plan(parsed: ParsedQuery, sql: str, columns: dict[str, ColumnInfo]) -> QueryPlan:
    raw_table, table_type = split_table_name(parsed.table)
    select_items = _expand_star(parsed, columns)
    aliases = {item.alias: item.expr for item in select_items if item.alias}

    def resolve_alias(expr: Expression) -> Expression:
        mapping = {
            Identifier(name): target
            for name, target in aliases.items()
            if name not in columns and Identifier(name) != target
        }
        return replace(expr, mapping) if mapping else expr

    select = [item.expr for item in select_items]

    def resolve_ordinal(expr: Expression, clause: str) -> Expression:
        # GROUP BY 1 / ORDER BY 2 DESC name the SELECT item at that 1-based position
        if (
            isinstance(expr, Literal)
            and isinstance(expr.value, int)
            and not isinstance(expr.value, bool)
        ):
            if not 1 <= expr.value <= len(select_items):
                raise QueryValidationError(
                    f"{clause} position {expr.value} is not in the SELECT list (1 to {len(select_items)})"
                )
            return select_items[expr.value - 1].expr
        return resolve_alias(expr)

    group_by = [resolve_ordinal(g, "GROUP BY") for g in parsed.group_by]
    having = resolve_alias(parsed.having) if parsed.having is not None else None
    order_by = [
        OrderItem(resolve_ordinal(o.expr, "ORDER BY"), o.desc, o.nulls_first)
        for o in parsed.order_by
    ]
    where = parsed.where

    if where is not None:
        _check_no_aggregation(where, "WHERE")
    for g in group_by:
        _check_no_aggregation(g, "GROUP BY")

    calls: list[Function] = []
    for expr in [*select, *(o.expr for o in order_by), *([having] if having else [])]:
        _collect_aggregations(expr, calls)

    distinct = parsed.distinct
    if distinct:
        if calls:
            raise QueryValidationError("DISTINCT cannot be combined with aggregation functions")
        if group_by:
            raise QueryValidationError("DISTINCT cannot be combined with GROUP BY")
        group_by = list(select)
    if calls or group_by:
        kind = "group_by" if group_by else "aggregation"
    else:
        kind = "selection"
        if having is not None:
            raise QueryValidationError("HAVING needs GROUP BY or an aggregation")

    if kind != "selection":
        allowed = set(group_by) | set(calls)
        for expr, clause in [
            *((s, "SELECT") for s in select),
            *((o.expr, "ORDER BY") for o in order_by),
        ]:
            _check_grouped(expr, allowed, clause)

    aggregations = [create_aggregation(c) for c in calls]
    for fn in aggregations:
        if fn.argument is not None:
            _check_no_aggregation(fn.argument, f"{fn.call.name.upper()}(...)")
        if fn.filter is not None:
            _check_no_aggregation(fn.filter, "FILTER (WHERE ...)")

    all_exprs = [*select, *group_by, *(o.expr for o in order_by)]
    all_exprs += [fn.filter for fn in aggregations if fn.filter is not None]
    all_exprs += [e for e in (where, having) if e is not None]
    for expr in all_exprs:
        _validate_functions(expr)
        if columns:
            for name in sorted(columns_of(expr)):
                if name not in columns:
                    raise UnknownColumnError(name)
    for fn in aggregations:
        if fn.multi_value and fn.argument is not None and columns:
            for name in columns_of(fn.argument):
                if columns[name].single_value:
                    raise QueryValidationError(
                        f"{fn.call.name.upper()} needs a multi-value column; '{name}' is single-value"
                    )
        elif fn.argument is not None and columns:
            for name in columns_of(fn.argument):
                if not columns[name].single_value and fn.name != "count":
                    raise QueryValidationError(
                        f"'{name}' is a multi-value column; use {fn.call.name.upper()}MV"
                    )

    for fn in aggregations:
        if fn.name in _NUMERIC_AGGREGATIONS and isinstance(fn.argument, Identifier) and columns:
            info = columns.get(fn.argument.name)
            if info is not None and info.data_type in {"STRING", "JSON", "BYTES"}:
                raise QueryValidationError(
                    f"{fn.call.name.upper()}({fn.argument.name}): cannot aggregate a {info.data_type} column; the function needs numbers"
                )

    names = [item.alias or str(item.expr) for item in select_items]
    agg_types = {fn.call: fn.result_type for fn in aggregations}
    types = [infer_type(e, columns, agg_types) for e in select]
    types = ["STRING" if t == "NULL" else t for t in types]  # a bare NULL column
    if kind == "group_by":  # a multi-value GROUP BY key yields one group per value
        types = [
            t.removesuffix("_ARRAY") if e in group_by else t
            for e, t in zip(select, types, strict=True)
        ]
    limit = parsed.limit if parsed.limit is not None else DEFAULT_LIMIT
    return QueryPlan(
        sql=sql, table=parsed.table, raw_table=raw_table, table_type=table_type, kind=kind,
        select=select, column_names=names, column_types=types, filter=where,
        group_by=group_by, aggregations=aggregations, having=having, order_by=order_by,
        limit=limit, offset=parsed.offset, distinct=distinct, explain=parsed.explain,
        options=dict(parsed.options), columns=columns,
    )  # fmt: skip


def _expand_star(parsed: ParsedQuery, columns: dict[str, ColumnInfo]):
    items = []
    for item in parsed.select:
        if item.expr == STAR:
            if not columns:
                raise QueryValidationError("SELECT * needs the table schema")
            items.extend(type(item)(Identifier(name)) for name in sorted(columns))
        else:
            items.append(item)
    return items


def _check_no_aggregation(expr: Expression, clause: str) -> None:
    for node in walk(expr):
        if (
            isinstance(node, Function)
            and is_aggregation(node.name)
            and not functions.lookup(node.name)
        ):
            raise QueryValidationError(f"Aggregation function {node} is not allowed in {clause}")


def _collect_aggregations(expr: Expression, out: list[Function]) -> None:
    if isinstance(expr, Function):
        if is_aggregation(expr.name) and not functions.lookup(expr.name):
            if expr not in out:
                out.append(expr)
            return
        for arg in expr.args:
            _collect_aggregations(arg, out)


def _check_grouped(expr: Expression, allowed: set[Expression], clause: str) -> None:
    if expr in allowed or isinstance(expr, Literal):
        return
    if isinstance(expr, Identifier):
        raise QueryValidationError(
            f"'{expr}' in {clause} should be in GROUP BY or inside an aggregation function"
        )
    for arg in expr.args:
        _check_grouped(arg, allowed, clause)


def _validate_functions(expr: Expression) -> None:
    for node in walk(expr):
        if not isinstance(node, Function):
            continue
        if is_aggregation(node.name) and not functions.lookup(node.name):
            continue
        if node.name in PREDICATES | CONNECTIVES:
            continue
        if node.name in NULL_FORMS:
            check_null_form(node.name, len(node.args))
            continue
        functions.check_call(node.name, len(node.args))
        if node.name == "cast" and not isinstance(node.args[1], Literal):
            raise QueryValidationError("CAST target must be a type name")


def infer_type(expr: Expression, columns: dict[str, ColumnInfo], agg_types: dict) -> str:
    """Pinot's result column type for ``expr``."""
    if expr in agg_types:
        return agg_types[expr]
    if isinstance(expr, Identifier):
        info = columns.get(expr.name)
        if info is None:
            return "STRING"
        return info.data_type if info.single_value else f"{info.data_type}_ARRAY"
    if isinstance(expr, Literal):
        value = expr.value
        if value is None:
            return "NULL"  # gives way to the other branches of a CASE or COALESCE
        if isinstance(value, bool):
            return "BOOLEAN"
        if isinstance(value, int):
            return "LONG" if abs(value) >= 2**31 else "INT"
        if isinstance(value, float):
            return "DOUBLE"
        return "STRING"
    if expr.name in PREDICATES | CONNECTIVES:
        return "BOOLEAN"
    if expr.name == "cast":
        return str(expr.args[1].value).upper()  # type: ignore[union-attr]
    if expr.name in ("coalesce", "nullif"):
        arg_types = [infer_type(a, columns, agg_types) for a in expr.args]
        return arg_types[0] if expr.name == "nullif" else _common_type(arg_types)
    if functions.canonical(expr.name) == "jsonextractscalar" and len(expr.args) >= 3:
        return str(getattr(expr.args[2], "value", "STRING")).upper()
    if functions.canonical(expr.name) == "datetimeconvert":
        fmt = str(getattr(expr.args[2], "value", ""))
        return "STRING" if "SIMPLE_DATE_FORMAT" in fmt.upper() else "LONG"
    fn = functions.lookup(expr.name)
    arg_types = [infer_type(a, columns, agg_types) for a in expr.args]
    if fn is None:
        return "STRING"
    result = fn.output_type(arg_types)
    return "DOUBLE" if result == "UNKNOWN" else result


def _common_type(types: list[str]) -> str:
    """COALESCE's result type, as Pinot's CoalesceTransformFunction widens: numbers to the
    widest number, anything else to STRING; a NULL literal's type gives way."""
    known = [t for t in types if t != "NULL"] or ["NULL"]
    if all(t == known[0] for t in known):
        return known[0]
    numeric = ["INT", "LONG", "FLOAT", "DOUBLE", "BIG_DECIMAL"]
    if all(t in numeric for t in known):
        return max(known, key=numeric.index)
    return "STRING"


__all__ = ["ColumnInfo", "QueryPlan", "build_plan", "compile_query"]
