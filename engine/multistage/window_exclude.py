"""``EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS`` in a window frame, which Pinot has and
DataFusion does not parse: SUM, COUNT and AVG over the frame minus the excluded rows, from
window aggregates DataFusion computes (the frame's, the current row's, its peers'); MIN,
MAX, FIRST_VALUE and LAST_VALUE from the parts of the frame that remain: the rows (or peer
groups, for GROUP and TIES) before the current one, the current row (TIES), and those
after it, each a window frame of its own.

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
    if (
        name in _BY_PARTS
        and isinstance(call, exp.Anonymous | exp.Func)
        and len(args := _arguments(call)) == 1
    ):
        return _by_parts(w, spec, mode, name, args[0])
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


_BY_PARTS = ("min", "max", "firstvalue", "lastvalue")


def _arguments(call: exp.Expression) -> list[exp.Expression]:
    if isinstance(call, exp.Anonymous):
        return list(call.expressions)
    return [call.this] if isinstance(call.this, exp.Expression) else []


def _by_parts(w: exp.Window, spec: exp.WindowSpec, mode: str, name: str, value):
    """MIN/MAX/FIRST_VALUE/LAST_VALUE over the frame's parts left after the exclusion."""
    kind = (spec.args.get("kind") or "ROWS").upper()
    start, end = _bound(spec.args.get("start")), _bound(spec.args.get("end"))
    by_groups = mode in ("GROUP", "TIES")
    if by_groups and not _peers_inside(spec):
        raise QueryValidationError(
            f"EXCLUDE {mode} needs a frame that holds the current row's peers"
        )
    if not by_groups and kind != "ROWS" and not (start == end == "UNBOUNDED"):
        raise QueryValidationError(
            f"EXCLUDE CURRENT ROW is supported for {name.upper()} over ROWS frames"
        )
    unit = "GROUPS" if by_groups else "ROWS"
    before = _part(w, unit, spec, "start", exp.Literal.number(1), "PRECEDING")
    after = _part(w, unit, spec, "end", exp.Literal.number(1), "FOLLOWING")
    current = value.copy() if mode == "TIES" else None

    def over(func: str, window: exp.Window | None, arg: exp.Expression) -> exp.Expression:
        copy = window.copy()
        copy.set("this", exp.Anonymous(this=func, expressions=[arg.copy()]))
        return copy

    if name in ("min", "max"):
        parts = [over(name.upper(), p, value) for p in (before, after) if p is not None]
        parts += [current] if current is not None else []
        if not parts:
            return exp.Cast(this=exp.Null(), to=exp.DataType.build("INT"))
        return exp.Anonymous(this="LEAST" if name == "min" else "GREATEST", expressions=parts)
    order = [before, current, after] if name == "firstvalue" else [after, current, before]
    func = "FIRST_VALUE" if name == "firstvalue" else "LAST_VALUE"
    ifs = []
    for part in order:
        if part is None:
            continue
        if isinstance(part, exp.Window):
            has_rows = exp.GT(this=over("COUNT", part, exp.Literal.number(1)),
                              expression=exp.Literal.number(0))  # fmt: skip
            ifs.append(exp.If(this=has_rows, true=over(func, part, value)))
        else:
            ifs.append(exp.If(this=exp.true(), true=part))
    return exp.Case(ifs=ifs) if ifs else exp.Null()


def _part(w: exp.Window, unit: str, spec: exp.WindowSpec, side: str, one, direction: str):
    """The frame from its ``side`` bound to one row (or peer group) before or after the
    current one; None when that bound leaves nothing on that side."""
    bound = spec.args.get(side)
    bound_side = (spec.args.get(f"{side}_side") or "").upper()
    text = _bound(bound)
    if text == "CURRENT ROW" or (text != "UNBOUNDED" and bound_side != direction):
        return None  # the frame stops at (or past) the current row on that side
    part = w.copy()
    frame = exp.WindowSpec(kind=unit)
    if direction == "PRECEDING":
        frame.set("start", bound.copy() if isinstance(bound, exp.Expression) else bound)
        frame.set("start_side", "PRECEDING")
        frame.set("end", one)
        frame.set("end_side", "PRECEDING")
    else:
        frame.set("start", one)
        frame.set("start_side", "FOLLOWING")
        frame.set("end", bound.copy() if isinstance(bound, exp.Expression) else bound)
        frame.set("end_side", "FOLLOWING")
    part.set("spec", frame)
    return part


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
