"""``EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS`` in a window frame, which Pinot has and
DataFusion does not parse: SUM, COUNT and AVG over the frame minus the excluded rows, from
window aggregates DataFusion computes (the frame's, the current row's, its peers').

The peers (rows equal on the ORDER BY keys) must lie inside the frame for GROUP and TIES: a
RANGE frame containing the current row, or ROWS from UNBOUNDED PRECEDING to UNBOUNDED
FOLLOWING. Other aggregations with EXCLUDE are refused with a clear error.
"""

from __future__ import annotations

from sqlglot import exp

from engine.multistage import functions as fn
from engine.query.errors import QueryValidationError


def without_exclude(w: exp.Window) -> exp.Expression:
    """``w`` rewritten without EXCLUDE (``w`` itself when it has none)."""
    spec = w.args.get("spec")
    exclude = spec.args.get("exclude") if spec is not None else None
    if exclude is None:
        return w
    mode = exclude.name.upper()
    plain = w.copy()
    plain.args["spec"].set("exclude", None)
    if mode == "NO OTHERS":
        return plain
    call = w.this
    name = fn.key(fn.call_name(call) or "")
    args = call.expressions if isinstance(call, exp.Anonymous) else []
    if name not in ("sum", "count", "avg") or len(args) != 1:
        raise QueryValidationError(f"EXCLUDE {mode} is not supported for {call.sql()}")
    if mode in ("GROUP", "TIES") and not _peers_inside(spec):
        raise QueryValidationError(
            f"EXCLUDE {mode} needs a frame that holds the current row's peers"
        )
    star = isinstance(args[0], exp.Star)
    value = None if star else args[0]

    def over(func: str, arg: exp.Expression, window: exp.Window) -> exp.Expression:
        copy = window.copy()
        copy.set("this", exp.Anonymous(this=func, expressions=[arg.copy()]))
        return copy

    peers = _peers_window(w)
    count_arg = exp.Star() if star else value
    frame_count = over("COUNT", count_arg, plain)
    current_count = exp.Literal.number(1) if star else exp.Case(
        ifs=[exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()),
                    true=exp.Literal.number(0))],
        default=exp.Literal.number(1),
    )  # fmt: skip
    peer_count = over("COUNT", count_arg, peers)
    count = {"CURRENT ROW": _minus(frame_count, current_count),
             "GROUP": _minus(frame_count, peer_count),
             "TIES": exp.Add(this=_minus(frame_count, peer_count), expression=current_count)}[mode]  # fmt: skip
    if name == "count":
        return exp.Paren(this=count)
    frame_sum = over("SUM", value, plain)
    current = _zero_if_null(value)
    peer_sum = _zero_if_null(over("SUM", value, peers))
    total = {"CURRENT ROW": _minus(_zero_if_null(frame_sum), current),
             "GROUP": _minus(_zero_if_null(frame_sum), peer_sum),
             "TIES": exp.Add(this=_minus(_zero_if_null(frame_sum), peer_sum), expression=current)}[mode]  # fmt: skip
    if name == "avg":
        total = exp.Cast(this=exp.Paren(this=total), to=exp.DataType.build("DOUBLE"))
        return exp.Div(this=total, expression=exp.Anonymous(
            this="NULLIF", expressions=[exp.Paren(this=count), exp.Literal.number(0)]))  # fmt: skip
    return exp.Case(
        ifs=[exp.If(this=exp.EQ(this=exp.Paren(this=count), expression=exp.Literal.number(0)),
                    true=exp.Null())],
        default=exp.Paren(this=total),
    )  # fmt: skip


def _peers_window(w: exp.Window) -> exp.Window:
    """A window over the current row's peers: the partition and the ORDER BY values."""
    order = w.args.get("order")
    keys = [o.this.copy() for o in order.expressions] if order is not None else []
    peers = w.copy()
    peers.set("partition_by", [p.copy() for p in w.args.get("partition_by") or []] + keys)
    peers.set("order", None)
    peers.set("spec", None)
    return peers


def _peers_inside(spec: exp.WindowSpec) -> bool:
    kind = (spec.args.get("kind") or "").upper()
    start, end = _bound(spec.args.get("start")), _bound(spec.args.get("end"))
    if kind == "RANGE":
        return True  # (RANGE bounds are UNBOUNDED or CURRENT ROW: peers are all in)
    return start == "UNBOUNDED" and end == "UNBOUNDED"


def _bound(value) -> str:
    return (value if isinstance(value, str) else getattr(value, "name", str(value))).upper()


def _zero_if_null(e: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this="COALESCE", expressions=[e.copy(), exp.Literal.number(0)])


def _minus(a: exp.Expression, b: exp.Expression) -> exp.Expression:
    return exp.Sub(this=a, expression=b)
