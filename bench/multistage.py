"""Multi-stage engine benchmark: SSB's 13 queries through the broker and two servers against
DuckDB on the same data in the same run, a lookup join against the same hash join, and a
colocated join against the same join hash-shuffled.

    python -m bench.multistage [--sf 1] [--runs 5] [--dir var/bench-mse] [--part all|ssb|colocated]

Generates the SSB tables (``bench.ssb``, seeded), builds ``lineorder`` into segments spread
over two servers (the dimensions on both, as dimension tables), loads the same Arrow tables
into DuckDB (2 threads, like the machine), checks that every query gives DuckDB's answer, and
prints each query's median time in both, their ratio, and the geometric mean of the ratios
beside its target (<= 1.5x DuckDB's time).

The colocated part (``bench.colocated``) loads two tables partitioned alike on the join key
and placed by partition, checks that both plans give DuckDB's answer, and prints how much
faster the colocated join is than the same join with both sides hash-shuffled (target >= 2x).
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import requests

from bench import colocated, ssb
from bench.cluster import start_cluster
from bench.upload import create_table, upload_segment

TARGET_RATIO = 1.5
COLOCATED_TARGET = 2.0
COLOCATED = ("SELECT {hint} COUNT(*), SUM(o.amount), SUM(c.credit) FROM orders o "
             "JOIN customers c ON o.cust = c.cust")  # fmt: skip
SHUFFLED = "/*+ joinOptions(left_distribution_type='hash', right_distribution_type='hash') */"
LOOKUP = (
    "SELECT {hint} S_REGION, COUNT(*), SUM(LO_REVENUE) FROM lineorder JOIN supplier "
    "ON LO_SUPPKEY = S_SUPPKEY GROUP BY S_REGION ORDER BY S_REGION"
)


def load(controller: str, workdir: Path, tables: dict, segments_of_fact: int) -> None:
    for name, table in tables.items():
        dim = name != "lineorder"
        config_json = ssb.table_config_json(name, replication=2 if dim else 1, dim=dim)
        schema, config = create_table(controller, name, ssb.schema_json(name, table), config_json)
        pieces = segments_of_fact if not dim else 1
        size = math.ceil(table.num_rows / pieces)
        for i in range(pieces):
            upload_segment(controller, workdir, table.slice(i * size, size), schema, config,
                           f"{name}_{i}")  # fmt: skip


def query(broker: str, sql: str) -> tuple[float, dict]:
    started = time.perf_counter()
    answer = requests.post(f"{broker}/query", json={"sql": sql}, timeout=300).json()
    elapsed = (time.perf_counter() - started) * 1000
    if answer.get("exceptions") and "resultTable" not in answer:
        raise RuntimeError(f"{sql[:80]}: {answer['exceptions']}")
    return elapsed, answer


def wait_loaded(broker: str, rows: int, table: str = "lineorder") -> None:
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        got = requests.post(f"{broker}/query/sql",
                            json={"sql": f"SELECT COUNT(*) FROM {table}"}, timeout=60).json()  # fmt: skip
        if got.get("resultTable") and got["resultTable"]["rows"][0][0] == rows:
            return
        time.sleep(1.0)
    raise RuntimeError(f"the broker never served every {table} row")


def same(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(sorted(map(tuple, a), key=str), sorted(map(tuple, b), key=str), strict=True):
        for x, y in zip(ra, rb, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                if abs(float(x) - float(y)) > 1e-6 * max(1.0, abs(float(y))):
                    return False
            elif x != y and str(x) != str(y):
                return False
    return True


def median_ms(fn, runs: int) -> float:
    fn()  # warm
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def colocated_join(broker: str, controller: str, workdir: Path, args) -> None:
    """The same join colocated and hash-shuffled, on the same tables in the same run."""
    tables = colocated.generate(args.orders, args.customers)
    for name, table in tables.items():
        colocated.load(controller, workdir, name, table)
    for name, table in tables.items():
        wait_loaded(broker, table.num_rows, name)
    duck = duckdb.connect()
    for name, table in tables.items():
        duck.register(name, table)
    expected = [list(r) for r in duck.execute(COLOCATED.format(hint="")).fetchall()]
    plans = {"colocated": "", "shuffled": SHUFFLED}
    for label, hint in plans.items():
        _, answer = query(broker, COLOCATED.format(hint=hint))
        kinds = _distributions(answer["stageStats"])
        if not same(answer["resultTable"]["rows"], expected):
            raise RuntimeError(f"the {label} join differs from DuckDB's answer")
        if ("PARTITIONED" in kinds) != (label == "colocated"):
            raise RuntimeError(f"the {label} join ran with exchanges {kinds}")
    # the runs alternate, so load from elsewhere on the machine weighs on both plans alike
    times: dict[str, list[float]] = {label: [] for label in plans}
    for _ in range(args.runs):
        for label, hint in plans.items():
            times[label].append(query(broker, COLOCATED.format(hint=hint))[0])
    ms = {label: statistics.median(values) for label, values in times.items()}
    ratio = ms["shuffled"] / ms["colocated"]
    print(f"colocated join vs shuffle ({args.orders:,} x {args.customers:,} rows, answers = "
          f"DuckDB): colocated {ms['colocated']:.1f} ms, shuffled {ms['shuffled']:.1f} ms: "
          f"{ratio:.2f}x faster (target >= {COLOCATED_TARGET}x)", flush=True)  # fmt: skip


def _distributions(node: dict) -> list[str]:
    own = [node["distribution"]] if "distribution" in node else []
    return own + [d for child in node["children"] for d in _distributions(child)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--segments", type=int, default=12, help="lineorder segments")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--part", choices=("all", "ssb", "colocated"), default="all")
    parser.add_argument("--orders", type=int, default=4_000_000, help="colocated join rows")
    parser.add_argument("--customers", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="bench-mse-"))
    workdir.mkdir(parents=True, exist_ok=True)
    zookeeper, processes, controller, broker_port = start_cluster(workdir)
    broker = f"http://127.0.0.1:{broker_port}"
    try:
        if args.part in ("all", "ssb"):
            ssb_part(broker, controller, workdir, args)
        if args.part in ("all", "colocated"):
            colocated_join(broker, controller, workdir, args)
    finally:
        for process in processes:
            process.stop()
        zookeeper.stop()
    return 0


def ssb_part(broker: str, controller: str, workdir: Path, args) -> None:
    """SSB's queries against DuckDB, and the lookup join against the same hash join."""
    print(f"generating SSB at SF {args.sf} ...", flush=True)
    tables = ssb.generate(args.sf)
    duck = duckdb.connect()
    duck.execute("SET threads = 2")
    for name, table in tables.items():
        duck.register(f"{name}_arrow", table)
        duck.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    started = time.monotonic()
    load(controller, workdir, tables, args.segments)
    wait_loaded(broker, tables["lineorder"].num_rows)
    print(f"loaded {tables['lineorder'].num_rows:,} lineorder rows in "
          f"{time.monotonic() - started:.0f} s; {args.runs} runs each, medians\n")  # fmt: skip
    print(f"{'query':<6} {'sprig ms':>9} {'duckdb ms':>10} {'ratio':>6}  answer")
    ratios = []
    for i, sql in enumerate(ssb.queries(), 1):
        _, answer = query(broker, sql)
        expected = [list(r) for r in duck.execute(sql).fetchall()]
        ok = same(answer["resultTable"]["rows"], expected)
        sprig_ms = median_ms(lambda sql=sql: query(broker, sql), args.runs)
        duck_ms = median_ms(lambda sql=sql: duck.execute(sql).fetchall(), args.runs)
        ratios.append(sprig_ms / duck_ms)
        print(f"Q{i:<5} {sprig_ms:>9.1f} {duck_ms:>10.1f} {sprig_ms / duck_ms:>5.1f}x  "
              f"{'= DuckDB' if ok else 'DIFFERS'}", flush=True)  # fmt: skip
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\ngeometric mean: {geo:.2f}x DuckDB's time (target <= {TARGET_RATIO}x)")
    hash_sql = LOOKUP.format(hint="")
    lookup_sql = LOOKUP.format(hint="/*+ joinOptions(join_strategy='lookup') */")
    hash_ms = median_ms(lambda: query(broker, hash_sql), args.runs)
    lookup_ms = median_ms(lambda: query(broker, lookup_sql), args.runs)
    print(f"lookup join {lookup_ms:.1f} ms vs the same hash join {hash_ms:.1f} ms "
          f"({hash_ms / lookup_ms:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
