"""Window functions of one block -> a ``Window`` node per distinct PARTITION BY (Pinot
splits several OVER clauses into a chain of one-group windows), and the binder that
replaces each ``f(...) OVER (...)`` with the field the node adds.

Pinot's rules: ranking functions ignore the frame; ``RANGE`` frames take only UNBOUNDED and
CURRENT ROW bounds; ``NTILE`` takes a literal.
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage import functions as fn
from engine.multistage.logical import Window, ref
from engine.query.errors import QueryValidationError

RANKING = {"row_number", "rank", "dense_rank", "ntile", "percent_rank", "cume_dist"}
VALUE = {"lag", "lead", "first_value", "last_value", "nth_value"}
AGGREGATE = {"sum", "avg", "min", "max", "count", "bool_and", "bool_or", "booland", "boolor",
             "stddev_pop", "stddev_samp", "var_pop", "var_samp", "every"}  # fmt: skip


def plan_windows(sp, node, items, order_items, bind):
    windows: list[exp.Window] = []
    for e in [*(e for e, _ in items), *(o.this for o in order_items)]:
        windows += [w for w in e.find_all(exp.Window) if _outermost_window(w, e)]
    if not windows:
        return node, bind
    bound: list[exp.Expression] = []
    for w in windows:
        b = _bind_window(w, bind)
        if b not in bound:
            bound.append(b)
    groups: dict[str, list[exp.Expression]] = {}
    for b in bound:
        key = "|".join(p.sql() for p in b.args.get("partition_by") or [])
        groups.setdefault(key, []).append(b)
    fields_of: list[tuple[exp.Expression, object]] = []
    hints = dict(sp.hints.get("windowOptions", {}))
    for group in groups.values():
        new_fields = [sp.p.ids.new(f"$w{len(fields_of) + i}") for i in range(len(group))]
        node = Window([*node.fields, *new_fields], node, group, hints)
        fields_of += list(zip(group, new_fields, strict=True))

    def bind_windows(e: exp.Expression) -> exp.Expression:
        if isinstance(e, exp.Window):
            b = _bind_window(e, bind)
            for w, field in fields_of:
                if w == b:
                    return ref(field)
        if not any(isinstance(n, exp.Window) for n in e.walk()):
            return bind(e)
        copy = e.copy()
        for key, value in list(e.args.items()):
            if isinstance(value, exp.Expression):
                copy.set(key, bind_windows(value))
            elif isinstance(value, list):
                copy.set(key, [bind_windows(v) if isinstance(v, exp.Expression) else v
                               for v in value])  # fmt: skip
        return copy

    return node, bind_windows


def _outermost_window(w: exp.Window, root: exp.Expression) -> bool:
    if w is root:
        return True
    parent = w.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Window | exp.Subquery):
            return False
        parent = parent.parent
    return True


def _bind_window(w: exp.Window, bind) -> exp.Expression:
    call = w.this
    name = fn.call_name(call.this if isinstance(call, exp.Filter) else call) or ""
    ignore_nulls = isinstance(call, exp.IgnoreNulls)
    if isinstance(call, exp.IgnoreNulls | exp.RespectNulls):
        name = fn.call_name(call.this) or ""
    _check(w, name)
    out = w.copy()
    out.set("this", _bind_call(call, bind))
    out.set("partition_by", [bind(p) for p in w.args.get("partition_by") or []])
    order = w.args.get("order")
    if order is not None:
        out.set("order", exp.Order(expressions=[
            exp.Ordered(this=bind(o.this), desc=o.args.get("desc"),
                        nulls_first=_nulls_first(o))
            for o in order.expressions
        ]))  # fmt: skip
    if name in RANKING:
        out.set("spec", None)  # the frame does not apply to ranking functions
    out.meta["ignore_nulls"] = ignore_nulls
    return out


def _bind_call(call: exp.Expression, bind) -> exp.Expression:
    if isinstance(call, exp.IgnoreNulls | exp.RespectNulls):
        return type(call)(this=_bind_call(call.this, bind))
    if isinstance(call, exp.Filter):
        return exp.Filter(this=_bind_call(call.this, bind), expression=exp.Where(
            this=bind(call.expression.this)))  # fmt: skip
    copy = call.copy()
    if isinstance(call, exp.Anonymous):
        copy.set("expressions", [_bind_arg(a, bind) for a in call.expressions])
        return copy
    for key, value in list(call.args.items()):
        if isinstance(value, exp.Expression):
            copy.set(key, _bind_arg(value, bind))
        elif isinstance(value, list):
            copy.set(key, [_bind_arg(v, bind) for v in value])
    return copy


def _bind_arg(arg: exp.Expression, bind) -> exp.Expression:
    if isinstance(arg, exp.Star):
        return arg.copy()
    return bind(arg)


def _nulls_first(o: exp.Ordered) -> bool:
    value = o.args.get("nulls_first")
    return bool(o.args.get("desc")) if value is None else bool(value)


def _check(w: exp.Window, name: str) -> None:
    spec = w.args.get("spec")
    if name not in RANKING | VALUE and fn.key(name) not in {fn.key(a) for a in AGGREGATE}:
        raise QueryValidationError(
            f"Function '{name.upper()}' is not supported as a window function"
        )
    if spec is not None and (spec.args.get("kind") or "").upper() == "RANGE":
        for side in ("start", "end"):
            bound = spec.args.get(side)
            text = bound if isinstance(bound, str) else getattr(bound, "name", str(bound))
            if bound is not None and str(text).upper() not in ("UNBOUNDED", "CURRENT ROW"):
                raise QueryValidationError(
                    "RANGE window frame with offset PRECEDING / FOLLOWING is not supported"
                )
    if name == "ntile":
        args = w.this.expressions if isinstance(w.this, exp.Anonymous) else []
        if len(args) != 1 or not isinstance(args[0], exp.Literal) or args[0].is_string:
            raise QueryValidationError("NTILE takes one integer literal")
