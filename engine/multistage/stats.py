"""``stageStats`` and the leaf counters of a multi-stage answer.

Each worker reports its time, rows in and out, the leaf's single-stage counters and the
limit flags; here they are summed per stage into Pinot's tree (stage 0 at the top, each
node with ``type``, ``executionTimeMs``, ``emittedRows`` and its ``children``: the stages
that send to it). Doc and segment counters sum every leaf, as in Pinot.
"""

from __future__ import annotations

from engine.query.intermediate import STAT_KEYS

_TYPES = {"Join": "HASH_JOIN", "Aggregate": "AGGREGATE", "Window": "WINDOW",
          "Sort": "SORT_OR_LIMIT", "SetOp": "UNION", "Filter": "FILTER",
          "Project": "TRANSFORM", "Values": "LITERAL", "Unnest": "UNNEST"}  # fmt: skip


def stage_stats(stages, worker_stats: list[dict]) -> dict:
    by_stage: dict[int, list[dict]] = {}
    for s in worker_stats:
        by_stage.setdefault(int(s["stage"]), []).append(s)
    specs = {s.id: s for s in stages}

    def node(stage_id: int) -> dict:
        spec = specs[stage_id]
        workers = by_stage.get(stage_id, [])
        out = {
            "type": "MAILBOX_SEND" if stage_id else "MAILBOX_RECEIVE",
            "stage": stage_id,
            "parallelism": len(spec.workers),
            "servers": sorted({w["server"] for w in workers}),
            "operators": _operators(spec.operators, workers),
            "executionTimeMs": round(sum(w["execution_ms"] for w in workers), 3),
            "clockTimeMs": round(max((w["execution_ms"] for w in workers), default=0), 3),
            "emittedRows": sum(w["emitted_rows"] for w in workers),
            "inputRows": sum(w["input_rows"] for w in workers),
        }
        if spec.distribution:
            out["distribution"] = spec.distribution.upper()
        leaf = _sum([w["leaf"] for w in workers])
        if leaf:
            out["table"] = ", ".join(sorted({t for w in workers for t in w["tables"]}))
            out.update(leaf)
        if looked_up := sum(1 for w in workers if w.get("lookup_joins")):
            out["lookupJoinWorkers"] = looked_up
        flags = {k: True for w in workers for k, v in w["flags"].items() if v}
        out.update(flags)
        out["children"] = [node(r.stage) for r in spec.receives]
        return out

    return node(0)


def _operators(operators: list[str], workers: list[dict]) -> list[str]:
    """Pinot's operator names; a star's joins (the stage's topmost ones, engine.multistage.star)
    are LOOKUP_JOIN when the workers ran them as key lookups (a worker whose dimension keys
    repeat, or whose inputs are big, runs the hash joins instead)."""
    names = [_TYPES.get(op, op.upper()) for op in operators]
    lookups = min((w.get("lookup_joins", 0) for w in workers), default=0)
    for i, name in enumerate(names):
        if lookups and name == "HASH_JOIN":
            names[i], lookups = "LOOKUP_JOIN", lookups - 1
    return names


def totals(worker_stats: list[dict]) -> dict:
    flags: dict[str, bool] = {}
    for s in worker_stats:
        for k, v in s.get("flags", {}).items():
            flags[k] = flags.get(k, False) or bool(v)
    leaf = _sum([s.get("leaf", {}) for s in worker_stats])
    return {"flags": flags, "leaf": {k: int(leaf.get(k, 0)) for k in STAT_KEYS}}


def _sum(parts: list[dict]) -> dict:
    out: dict[str, int] = {}
    for part in parts:
        for k, v in part.items():
            if k in STAT_KEYS:
                out[k] = out.get(k, 0) + int(v)
    return out
