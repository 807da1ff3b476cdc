"""What `sprig quickstart` prints once the cluster is up: addresses, processes, tables, example
queries and the streams' guide."""

from __future__ import annotations

from pathlib import Path

from sprig.stack.process import ServiceProcess
from sprig.stack.stack import LocalStack

EXAMPLE_QUERIES = (
    "SELECT Carrier, COUNT(*) AS flights, AVG(ArrDelay) AS avgArrDelay FROM airlineStats "
    "WHERE Cancelled = 0 AND Diverted = 0 GROUP BY Carrier ORDER BY flights DESC LIMIT 10",
    "SELECT Origin, Dest, COUNT(*) AS flights FROM airlineStats "
    "WHERE DaysSinceEpoch BETWEEN 16071 AND 16077 GROUP BY Origin, Dest "
    "ORDER BY flights DESC LIMIT 5",
    "SELECT city, COUNT(*) AS bills, SUM(totalToPay) AS toPay FROM billing "
    "GROUP BY city ORDER BY toPay DESC LIMIT 5",
    # Pinot's null-handling quickstart: nulls are skipped only with enableNullHandling
    "SET enableNullHandling=true; SELECT COUNT(*) AS clients, COUNT(*) FILTER (WHERE salary "
    "IS NULL) AS noSalary, MIN(salary) AS minSalary FROM clientSalaryNulls",
)


def process_address(child: ServiceProcess, console: str, broker_url: str) -> str:
    """What the summary and `sprig stack status` show as a child's address."""
    if child.name == "controller":
        return console
    if child.name == "broker":
        return broker_url
    if child.name.startswith("server"):
        argv = child.argv
        return f"query :{argv[argv.index('--query-port') + 1]}, admin :{argv[argv.index('--admin-port') + 1]}"
    return "queue:minion_untagged"


def print_summary(
    console: str,
    broker_url: str,
    stack: LocalStack,
    children: list[ServiceProcess],
    data_dir: Path,
    loaded: dict[str, str],
    guide: list[str],
    examples_dir: Path,
) -> None:
    """The banner quickstart prints once the cluster is up: where things are, the processes,
    the tables loaded and queries to try."""
    print()
    print(f"Sprig is running. Console: {console}   REST API: {console}/help")
    print(f"Broker: {broker_url}/query/sql")
    print()
    print(f"  {'process':<11} {'address':<32} {'pid':<8} log")
    for row in stack.describe():
        print(
            f"  {row['service']:<11} {row['address']!s:<32} {row['pid'] or '-'!s:<8} {row['log'] or '-'}"
        )
    for child in children:
        address = process_address(child, console, broker_url)
        print(f"  {child.name:<11} {address:<32} {child.pid!s:<8} {child.log_path}")
    print()
    if loaded:
        print(f"Tables (from Apache Pinot's examples in {examples_dir}):")
        for table, summary in loaded.items():
            print(f"  {table}: {summary}")
        print()
        print("Example queries (paste into the Query Console, or send to the broker):")
        for sql in EXAMPLE_QUERIES:
            print(f"  {sql}")
        print()
        print(
            f"  curl -s -X POST {broker_url}/query/sql -H 'Content-Type: application/json' "
            f'-d \'{{"sql": "{EXAMPLE_QUERIES[0]}"}}\''
        )
        print()
    for line in guide:
        print(line)
    print(f"Data: {data_dir}")
    print("A process that exits is restarted; `sprig stack status` lists them all.")
    print("Press Ctrl-C to stop everything.", flush=True)
