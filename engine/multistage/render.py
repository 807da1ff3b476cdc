"""A stage's operator tree -> one DataFusion SQL statement over the stage's input tables.

Each logical node becomes a SELECT over its input's SELECT (DataFusion's optimizer flattens
them again); columns are named by field ids, so nothing is ambiguous. Pinot's meanings are
kept where DataFusion's differ: ASC NULLS LAST / DESC NULLS FIRST are always written out,
``DISTINCTCOUNT`` is ``COUNT(DISTINCT ...)``, ``MINUS`` is ``EXCEPT``, and Pinot's scalar
functions without a DataFusion twin run as Python UDFs (``engine.multistage.udfs``).
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
from sqlglot import exp
from sqlglot.dialects.postgres import Postgres

from engine.multistage import functions as fn
from engine.multistage.logical import (
    Aggregate,
    Filter,
    Join,
    Node,
    Project,
    SetOp,
    Sort,
    SortKey,
    Unnest,
    Values,
    Window,
)
from engine.multistage.scope import rewrite
from engine.multistage.types import sql_type
from engine.multistage.udfs import NEGATE
from engine.multistage.window_exclude import without_exclude
from engine.query.errors import QueryValidationError

WINDOW_ONLY = {"rownumber", "rank", "denserank", "ntile", "percentrank", "cumedist", "lag",
               "lead", "firstvalue", "lastvalue", "nthvalue"}  # fmt: skip


class DataFusionDialect(Postgres):
    class Generator(Postgres.Generator):
        TRANSFORMS = {
            **Postgres.Generator.TRANSFORMS,
            exp.IgnoreNulls: lambda self, e: f"{self.sql(e, 'this')} IGNORE NULLS",
            exp.RespectNulls: lambda self, e: f"{self.sql(e, 'this')} RESPECT NULLS",
            # integer division truncates, as in Pinot: no cast to a fractional type
            exp.Div: lambda self, e: self.binary(e, "/"),
            exp.BitwiseXor: lambda self, e: self.binary(e, "^"),
        }


@dataclasses.dataclass(eq=False)
class Input(Node):
    """A table the stage reads: a mailbox's rows, or the leaf's."""

    table: str


_NONE = '1 AS "$none"'  # a node without columns still has rows


def _joins(node: Node) -> bool:
    return isinstance(node, Join) or any(_joins(c) for c in node.inputs)


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Renderer:
    """Renders nodes; ``scalar`` maps a Pinot scalar call to a DataFusion expression (the
    UDF registry of the query, ``engine.multistage.udfs``)."""

    def __init__(self, scalar, types: dict | None = None) -> None:
        self.scalar = scalar
        self.types = types or {}  # field id -> Arrow type, where known
        self._alias = 0

    def _next(self) -> str:
        self._alias += 1
        return f"t{self._alias}"

    def sql(self, node: Node) -> str:
        method = getattr(self, f"_{type(node).__name__.lower()}", None)
        if method is None:
            raise QueryValidationError(f"Cannot run {type(node).__name__} in a stage")
        return method(node)

    def expr(self, e: exp.Expression) -> str:
        return self._pinot_to_sql(e.copy()).sql(dialect=DataFusionDialect)

    def _cols(self, node: Node, prefix: str | None = None) -> str:
        p = f"{prefix}." if prefix else ""
        return ", ".join(p + quote(f.id) for f in node.fields) or _NONE

    # --- nodes -----------------------------------------------------------------------------
    def _input(self, node: Input) -> str:
        return f"SELECT {self._cols(node)} FROM {quote(node.table)}"

    def _values(self, node: Values) -> str:
        if not node.fields:
            return f"SELECT {_NONE}"
        rows = ", ".join("(" + ", ".join(self.expr(v) for v in row) + ")" for row in node.rows)
        names = ", ".join(quote(f.id) for f in node.fields)
        return f"SELECT * FROM (VALUES {rows}) AS {self._next()}({names})"

    def _filter(self, node: Filter) -> str:
        return (f"SELECT {self._cols(node)} FROM ({self.sql(node.input)}) AS {self._next()} "
                f"WHERE {self.expr(node.condition)}")  # fmt: skip

    def _project(self, node: Project) -> str:
        if isinstance(node.input, Sort):  # the order must reach the stage's output
            return self._sorted_project(node, node.input)
        items = ", ".join(f"{self.expr(e)} AS {quote(f.id)}"
                          for f, e in zip(node.fields, node.exprs, strict=True))  # fmt: skip
        items = items or _NONE
        return f"SELECT {items} FROM ({self.sql(node.input)}) AS {self._next()}"

    def _sorted_project(self, node: Project, sort: Sort) -> str:
        """A projection of sorted rows as one SELECT: DataFusion drops an ORDER BY inside a
        subquery, so the sort keys (which may be columns the projection drops) go outside."""
        items = ", ".join(f"{self.expr(e)} AS {quote(f.id)}"
                          for f, e in zip(node.fields, node.exprs, strict=True))  # fmt: skip
        out = f"SELECT {items or _NONE} FROM ({self.sql(sort.input)}) AS {self._next()}"
        return out + self._order_limit(sort)

    def _order_limit(self, node: Sort) -> str:
        out = ""
        if node.keys:
            out += " ORDER BY " + ", ".join(self.order_key(k) for k in node.keys)
        if node.limit is not None:
            out += f" LIMIT {node.limit}"
        if node.offset:
            out += f" OFFSET {node.offset}"
        return out

    def _aggregate(self, node: Aggregate) -> str:
        keys = [self.expr(k) for k in node.keys]
        aggs = [self.expr(a) for a in node.aggs]
        items = ", ".join(f"{e} AS {quote(f.id)}" for f, e in zip(node.fields, keys + aggs,
                                                                   strict=True))  # fmt: skip
        out = f"SELECT {items} FROM ({self.sql(node.input)}) AS {self._next()}"
        if node.grouping_sets is not None:
            sets = ", ".join("(" + ", ".join(keys[i] for i in s) + ")" for s in node.grouping_sets)
            out += f" GROUP BY GROUPING SETS ({sets})"
        elif keys:
            out += " GROUP BY " + ", ".join(keys)
        return out

    def _join(self, node: Join) -> str:
        left, right = self.sql(node.left), self.sql(node.right)
        la, ra = self._next(), self._next()
        cond = self.expr(node.condition) if node.condition is not None else "TRUE"
        if node.kind in ("asof", "left_asof"):
            return self._asof(node, left, right, la, ra)
        if node.kind == "anti" and node.null_aware:
            return (f"SELECT {self._cols(node, la)} FROM ({left}) AS {la} WHERE NOT EXISTS "
                    f"(SELECT 1 FROM ({right}) AS {ra} WHERE {self._null_aware(node)})")  # fmt: skip
        if node.kind in ("semi", "anti"):
            word = "LEFT SEMI" if node.kind == "semi" else "LEFT ANTI"
            return (f"SELECT {self._cols(node, la)} FROM ({left}) AS {la} {word} JOIN "
                    f"({right}) AS {ra} ON {cond}")  # fmt: skip
        word = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN",
                "full": "FULL JOIN", "cross": "CROSS JOIN"}[node.kind]  # fmt: skip
        on = "" if node.kind == "cross" else f" ON {cond}"
        cols = ", ".join([*(f"{la}.{quote(f.id)}" for f in node.left.fields),
                          *(f"{ra}.{quote(f.id)}" for f in node.right.fields)])  # fmt: skip
        if node.kind == "inner" and _joins(node.left) and not _joins(node.right):
            # DataFusion builds its hash table on the left input and, without statistics
            # of a join's output, keeps it there: the growing side of a star join goes right
            return f"SELECT {cols or 1} FROM ({right}) AS {ra} JOIN ({left}) AS {la}{on}"
        return f"SELECT {cols or 1} FROM ({left}) AS {la} {word} ({right}) AS {ra}{on}"

    def _null_aware(self, node: Join) -> str:
        """``x NOT IN (SELECT y ...)``: a row is rejected when some y equals x, or either is
        NULL (three-valued logic)."""
        parts = []
        for c in _conjuncts(node.condition):
            if isinstance(c, exp.EQ):
                a, b = self.expr(c.this), self.expr(c.expression)
                parts.append(f"({a} = {b} OR {a} IS NULL OR {b} IS NULL)")
            else:
                parts.append(self.expr(c))
        return " AND ".join(parts) or "TRUE"

    def _asof(self, node: Join, left: str, right: str, la: str, ra: str) -> str:
        """The closest right row by the match condition among those with equal keys:
        the join ranked per left row, the first kept."""
        match = node.match_condition
        right_ids = {f.id for f in node.right.fields}
        right_side = match.expression if match.expression.name in right_ids else match.this
        left_is_this = right_side is match.expression
        closest_desc = isinstance(match, exp.GT | exp.GTE) == left_is_this
        row = quote("$asof_row")
        numbered = f"SELECT *, ROW_NUMBER() OVER () AS {row} FROM ({left}) AS {self._next()}"
        cond = self.expr(node.condition) if node.condition is not None else "TRUE"
        word = "LEFT JOIN" if node.kind == "left_asof" else "JOIN"
        order = f"{self.expr(right_side)} {'DESC' if closest_desc else 'ASC'} NULLS LAST"
        ranked = (f"SELECT {la}.*, {', '.join(f'{ra}.{quote(f.id)}' for f in node.right.fields)},"
                  f" ROW_NUMBER() OVER (PARTITION BY {la}.{row} ORDER BY {order}) AS \"$asof_rank\""
                  f" FROM ({numbered}) AS {la} {word} ({right}) AS {ra} ON ({cond}) AND "
                  f"({self.expr(match)})")  # fmt: skip
        return f'SELECT {self._cols(node)} FROM ({ranked}) AS {self._next()} WHERE "$asof_rank" = 1'

    def _window(self, node: Window) -> str:
        extra = node.fields[len(node.input.fields) :]
        items = [quote(f.id) for f in node.input.fields]
        items += [f"{self.expr(w)} AS {quote(f.id)}"
                  for f, w in zip(extra, node.windows, strict=True)]  # fmt: skip
        return f"SELECT {', '.join(items)} FROM ({self.sql(node.input)}) AS {self._next()}"

    def _sort(self, node: Sort) -> str:
        out = f"SELECT {self._cols(node)} FROM ({self.sql(node.input)}) AS {self._next()}"
        return out + self._order_limit(node)

    def order_key(self, key: SortKey) -> str:
        return (f"{self.expr(key.expr)} {'DESC' if key.desc else 'ASC'} "
                f"NULLS {'FIRST' if key.nulls_first else 'LAST'}")  # fmt: skip

    def _setop(self, node: SetOp) -> str:
        def side(child: Node) -> str:
            items = ", ".join(f"{quote(c.id)} AS {quote(f.id)}"
                              for c, f in zip(child.fields, node.fields, strict=True))  # fmt: skip
            return f"SELECT {items} FROM ({self.sql(child)}) AS {self._next()}"

        word = {"union": "UNION", "intersect": "INTERSECT", "except": "EXCEPT"}[node.kind]
        word += " ALL" if node.all else ""
        inner = f"({side(node.left)}) {word} ({side(node.right)})"
        return f"SELECT {self._cols(node)} FROM ({inner}) AS {self._next()}"

    def _unnest(self, node: Unnest) -> str:
        extra = node.fields[len(node.input.fields) :]
        items = [quote(f.id) for f in node.input.fields]
        items += [f"UNNEST({self.expr(a)}) AS {quote(f.id)}"
                  for f, a in zip(extra, node.arrays, strict=True)]  # fmt: skip
        return f"SELECT {', '.join(items)} FROM ({self.sql(node.input)}) AS {self._next()}"

    # --- expressions -------------------------------------------------------------------------
    def _pinot_to_sql(self, e: exp.Expression) -> exp.Expression:
        def visit(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Cast):
                return _cast(n, self.types)
            if isinstance(n, exp.Between) and n.args.get("symmetric"):
                low, high = n.args["low"], n.args["high"]
                return exp.Between(
                    this=n.this,
                    low=exp.Anonymous(this="LEAST", expressions=[low, high.copy()]),
                    high=exp.Anonymous(this="GREATEST", expressions=[low.copy(), high]),
                )
            if isinstance(n, _COMPARISONS):
                return self._epoch_compare(n)
            if isinstance(n, exp.Window):
                return without_exclude(n)
            if isinstance(n, exp.Neg) and isinstance(n.this, exp.Column):
                t = self.types.get(n.this.name)
                if t is not None and str(t) in NEGATE:
                    return exp.Anonymous(this=NEGATE[str(t)], expressions=[n.this])
            if isinstance(n, exp.Ordered):
                return n
            if isinstance(n, exp.Anonymous | exp.Func) and not isinstance(
                n, exp.Cast | exp.Case | exp.If | exp.Window
            ):
                return self._call(n)
            return n

        return rewrite(e, visit)

    def _epoch_compare(self, n: exp.Expression) -> exp.Expression:
        """TIMESTAMP against an integer compares as epoch milliseconds (Pinot)."""
        sides = [n.this, n.expression]
        kinds = [self._kind(s) for s in sides]
        if set(kinds) == {"timestamp", "integer"}:
            for key, side, kind in zip(("this", "expression"), sides, kinds, strict=True):
                if kind == "timestamp":
                    n.set(key, exp.Cast(this=side, to=exp.DataType.build("BIGINT")))
        return n

    def _kind(self, e: exp.Expression) -> str | None:
        if isinstance(e, exp.Cast):
            return "timestamp" if e.to.is_type("timestamp") else None
        if isinstance(e, exp.Anonymous) and str(e.this).lower() == "to_timestamp_millis":
            return "timestamp"  # CAST(epoch literal AS TIMESTAMP), already rewritten
        if isinstance(e, exp.Literal):
            return "integer" if not e.is_string and e.this.lstrip("-").isdigit() else None
        if isinstance(e, exp.Column) and e.name in self.types:
            t = self.types[e.name]
            if pa.types.is_timestamp(t):
                return "timestamp"
            if pa.types.is_integer(t):
                return "integer"
        return None

    def _call(self, n: exp.Expression) -> exp.Expression:
        name = fn.call_name(n)
        if name is None:
            return n
        k = fn.key(name)
        args = list(n.expressions) if isinstance(n, exp.Anonymous) else None
        if args is None:
            return n  # a sqlglot function node (SUBSTRING, TRIM, COALESCE ...): as written
        if k in fn.DISTINCT_AGGREGATES:
            return exp.Anonymous(this=fn.DISTINCT_AGGREGATES[k],
                                 expressions=[exp.Distinct(expressions=args)])  # fmt: skip
        if k == "minmaxrange":
            return exp.Sub(this=exp.Anonymous(this="MAX", expressions=args),
                           expression=exp.Anonymous(this="MIN", expressions=[a.copy() for a in args]))  # fmt: skip
        if k in fn.SQL_AGGREGATES:
            return exp.Anonymous(this=fn.SQL_AGGREGATES[k], expressions=args)
        if k in WINDOW_ONLY:
            return n
        if fn.is_aggregate_call(n) and not self.scalar.declared(name):  # single-stage only
            return self.scalar.aggregate(name, args)
        return self.scalar(name, args, n)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def _cast(n: exp.Cast, types: dict | None = None) -> exp.Expression:
    to = n.args["to"]
    name = to.args.get("kind") if to.this == exp.DataType.Type.USERDEFINED else to.sql()
    target = sql_type(str(name)) if name else None
    if target is None:
        raise QueryValidationError(f"Unknown type {to.sql()} in CAST")
    inner = n.this
    if target == "TIMESTAMP" and isinstance(inner, exp.Literal) and not inner.is_string:
        return exp.Anonymous(this="to_timestamp_millis", expressions=[inner])  # epoch ms
    source = types.get(inner.name) if types and isinstance(inner, exp.Column) else None
    if target == "VARCHAR" and source is not None and pa.types.is_binary(source):
        return exp.Anonymous(this="encode", expressions=[inner, exp.Literal.string("hex")])
    return exp.Cast(this=n.this, to=exp.DataType.build(target, dialect="postgres"))


def _conjuncts(e):
    if e is None:
        return []
    if isinstance(e, exp.And):
        return _conjuncts(e.this) + _conjuncts(e.expression)
    return [e]
