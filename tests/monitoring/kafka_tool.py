"""Kafka's own `kafka-consumer-groups` (ConsumerGroupCommand from the kafka-tools jar of the
local Kafka's version), run as Kafka's script runs it, and the side-by-side comparison of its
output with ours: line by line, ignoring only column padding and the values of CONSUMER-ID,
HOST and CLIENT-ID (a member's id and address, which are the same member either way)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sprig.stack.kafka import kafka_libs

TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
LOG_CONFIG = Path(__file__).with_name("kafka_tool_log4j2.properties")
MASKED = ("CONSUMER-ID", "HOST", "CLIENT-ID")


def kafka_consumer_groups(bootstrap: str, *args: str) -> tuple[str, str]:
    """Kafka's tool's (stdout, stderr)."""
    argv = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={LOG_CONFIG}", "-cp", f"{kafka_libs()}/*", TOOL,
            "--bootstrap-server", bootstrap, *args]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout, done.stderr


def blocks(text: str) -> list[list[list[str]]]:
    """The output as tables (split at blank lines), each a list of lines split into fields
    (so padding does not count), the member columns masked, the rows under a header sorted
    (Kafka does not fix the order of a member's partitions)."""
    tables = []
    for chunk in text.split("\n\n"):
        lines = [line.split() for line in chunk.splitlines() if line.strip()]
        if not lines:
            continue
        header = lines[0]
        if header and header[0] == "GROUP":
            masked = [i for i, name in enumerate(header) if name in MASKED]
            rows = [[("*" if i in masked else v) for i, v in enumerate(row)] for row in lines[1:]]
            lines = [header, *sorted(rows)]
        tables.append(lines)
    return tables


def groups_of(tables: list[list[list[str]]]) -> list[str]:
    """The group of each table (its first row's first field), in order."""
    return [table[1][0] for table in tables if len(table) > 1 and table[0][0] == "GROUP"]


def only(tables: list[list[list[str]]], groups: set[str]) -> list[list[list[str]]]:
    return [t for t in tables if len(t) > 1 and t[0][0] == "GROUP" and t[1][0] in groups]
