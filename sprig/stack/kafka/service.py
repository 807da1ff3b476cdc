"""Apache Kafka in KRaft mode (each node both broker and controller), from the jars that
`sprig.stack.kafka.jars` resolved: one node for the quickstart, the tests and the benchmarks,
several for a replication test (`kafka_cluster`).

A node keeps its log directories under its work dir and formats them only the first time, so
a restarted node comes back with its topics and committed offsets. The controller quorum is
static (`controller.quorum.voters`), so a restart on other ports keeps working.
"""

from __future__ import annotations

import base64
import shlex
import uuid
from pathlib import Path

from sprig.stack.kafka.jars import LOG4J_CONFIG, kafka_libs
from sprig.stack.process import ServiceProcess, choose_port
from sprig.stack.services import Service, check_java

DEFAULT_HEAP = "512m"
# a first start formats the storage and creates __consumer_offsets; on 2 busy cores, with three
# nodes replicating it, that has taken over 90 s
READY_TIMEOUT_S = 240
READINESS_GROUP = "sprig-readiness-probe"  # never joined nor committed: Kafka lists nothing

# Settings that differ from Kafka's defaults for a local node, and why.
LOCAL_SETTINGS = {
    # the first consumer of a new group joins at once, not after 3 s
    "group.initial.rebalance.delay.ms": "0",
    # retention and compaction act within seconds of being due, not after 5 min / 15 s / 30 s
    "log.retention.check.interval.ms": "1000",
    "log.cleaner.backoff.ms": "1000",
    "log.initial.task.delay.ms": "1000",
    # a laptop needs few threads; __consumer_offsets keeps Kafka's 50 partitions
    "num.network.threads": "2",
    "num.io.threads": "4",
    "background.threads": "4",
    "transaction.state.log.num.partitions": "8",
    "share.coordinator.state.topic.num.partitions": "4",
}


def new_cluster_id() -> str:
    """A Kafka Uuid as `kafka-storage random-uuid` prints it (URL-safe base64, no padding,
    never starting with '-', which the tools would read as an option)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class KafkaService(Service):
    """One Kafka node. `port` is its client listener, `controller_port` its KRaft listener;
    `voters` (node id -> controller port) lists the quorum, by default this node alone."""

    name = "kafka"

    def __init__(
        self,
        workdir: Path,
        port: int | None = None,
        *,
        strict_port: bool = False,
        name: str | None = None,
        node_id: int = 1,
        cluster_id: str | None = None,
        heap: str = DEFAULT_HEAP,
    ) -> None:
        if name is not None:
            self.name = name
        super().__init__(workdir, port, strict_port=strict_port)
        self.node_id = node_id
        self.controller_port = choose_port(f"{self.name} controller", None)
        self.voters = {node_id: self.controller_port}
        self.cluster_id = cluster_id or new_cluster_id()
        self.heap = heap

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return self.bootstrap_servers

    @property
    def log_dir(self) -> Path:
        """The node's Kafka log directory (topics, offsets, the KRaft metadata log)."""
        return self.workdir / "data"

    def properties(self) -> dict[str, str]:
        replicas = str(min(3, len(self.voters)))
        min_isr = str(min(2, len(self.voters)))
        quorum = ",".join(f"{n}@127.0.0.1:{p}" for n, p in sorted(self.voters.items()))
        return {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": quorum,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
            f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            # Kafka's default of 3 replicas makes every group commit fail on one node
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": min_isr,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": min_isr,
            **LOCAL_SETTINGS,
        }

    def build(self) -> ServiceProcess:
        check_java()
        libs = kafka_libs()
        config = self.workdir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        classpath = f"{libs}/*"
        jvm = ["java", "-Xms64m", f"-Xmx{self.heap}", "-XX:+UseSerialGC",
               "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
               f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
               f"-Dkafka.logs.dir={self.workdir}", "-cp", classpath]  # fmt: skip
        format_storage = ["java", "-Xmx128m", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}",
                          "-cp", classpath, "kafka.tools.StorageTool", "format",
                          "-t", self.cluster_id, "-c", str(config)]  # fmt: skip
        # Format once: a formatted log dir holds meta.properties, and formatting again would
        # refuse (or, forced, lose the topics).
        meta = self.log_dir / "meta.properties"
        script = (
            f"[ -f {shlex.quote(str(meta))} ] || {shlex.join(format_storage)} || exit 1\n"
            f"exec {shlex.join([*jvm, 'kafka.Kafka', str(config)])}\n"
        )
        return ServiceProcess(
            self.name, ["sh", "-c", script], log_path=self.log_path, ready=self._ready,
            timeout_s=READY_TIMEOUT_S,
        )  # fmt: skip

    def _ready(self) -> bool:
        """Every node is unfenced and the group coordinator answers. `__consumer_offsets` is
        created at the first FindCoordinator and its partitions load after; until then every
        commit fails with NOT_COORDINATOR, so the probe asks about a group itself."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient

        # log_level 0: "connection refused" while it starts is expected, not worth a line
        admin = AdminClient(
            {"bootstrap.servers": self.bootstrap_servers, "socket.timeout.ms": 1000,
             "log_level": 0}
        )  # fmt: skip
        metadata = admin.list_topics(timeout=1.0)
        # a KRaft broker is listed once the controller has unfenced it
        if len(metadata.brokers) < len(self.voters) or metadata.controller_id < 0:
            return False
        future = admin.describe_consumer_groups([READINESS_GROUP], request_timeout=2)
        try:
            future[READINESS_GROUP].result(timeout=3)
        except KafkaException as exc:
            return exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
        return True


def kafka_cluster(workdir: Path, nodes: int, heap: str = DEFAULT_HEAP) -> list[KafkaService]:
    """`nodes` Kafka nodes that form one cluster (each a broker and a KRaft voter); start them
    all, then wait for each. Internal topics get 3 replicas (fewer with fewer nodes)."""
    cluster_id = new_cluster_id()
    members = [
        KafkaService(workdir, name=f"kafka-{n}", node_id=n, cluster_id=cluster_id, heap=heap)
        for n in range(1, nodes + 1)
    ]
    voters = {member.node_id: member.controller_port for member in members}
    for member in members:
        member.voters = voters
    return members
